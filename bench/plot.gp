# Bar chart of Keel's throughput relative to each peer (1.0 = parity), one
# group per row of bench/run.sh's table. Usage, from the repository root:
#
#   gnuplot -e "in='bench/results/latest.csv'; out='docs/img/bench-small.png'" bench/plot.gp
#
# The CSV is the one bench/run.sh writes next to latest.md:
#   test,pipeline,size,io_threads,keel,<peer>...,Keel/<Peer>...
# (files from before the io_threads column, without it, work too). With
# --io-threads LIST, each group is one test at one io-threads value, the
# ratio of Keel and the peer both at that value ("SET P16 64B io2").
if (!exists("in")) in = 'bench/results/latest.csv'
if (!exists("out")) out = 'docs/img/bench-small.png'

set datafile separator ','
hdr = system(sprintf("head -n 1 '%s'", in))
has_io = strstrt(hdr, ',io_threads,') > 0
base = has_io ? 5 : 4                   # Keel's column
stats in using base nooutput
ncols = STATS_columns
npeers = (ncols - base) / 2
first = base + npeers + 1
multi_io = 0
if (has_io) {
    stats in using 4 nooutput
    multi_io = (STATS_min != 1 || STATS_max != 1)
}

set terminal pngcairo size 1100,520 font ',10'
set output out
set title "Keel throughput relative to peers (redis-benchmark -c 50, median of 3; > 1 means Keel is faster)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel 'Keel rps / peer rps'
set yrange [0:*]
set grid ytics
set key top left
set xtics rotate by 35 right scale 0 font ",9"
set key noenhanced
set bmargin 7
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb '#444444' front
label(t, p, s) = sprintf('%s P%s %sB', t, p, s) . (multi_io ? ' io' . strcol(4) : '')
plot for [c = first:ncols] in using c:xtic(label(strcol(1), strcol(2), strcol(3))) \
     title columnheader(c) lc rgb word("#3b6ea8 #d9822b", c - first + 1)
