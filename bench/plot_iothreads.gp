# Requests/s per test for every server and io-threads setting, from the CSV
# of bench/run.sh (run with --io-threads LIST): one panel per configuration
# (-P 1 left, -P 16 right, one row per value size), one group of bars per
# test, one bar per server and io-threads value (a colour per server, paler
# for each further io-threads value). Usage, from the repository root:
#
#   gnuplot -e "in='bench/results/latest.csv'; out='docs/img/bench-iothreads.png'" bench/plot_iothreads.gp
#
# The same for the CPU table (latest-cpu.csv, server CPU µs per request; a
# file name ending in -cpu.csv sets that axis label):
#
#   gnuplot -e "in='bench/results/latest-cpu.csv'; out='docs/img/bench-iothreads-cpu.png'" bench/plot_iothreads.gp
#
# Input: test,pipeline,size,io_threads,keel,<peer>...,Keel/<Peer>...
# (a CSV without the io_threads column counts as io-threads 1).
if (!exists("in")) in = 'bench/results/latest.csv'
if (!exists("out")) out = 'docs/img/bench-iothreads.png'
is_cpu = strstrt(in, '-cpu.csv') > 0
if (!exists("ylab")) ylab = is_cpu ? 'server CPU µs per request' : 'requests/s'
if (!exists("yfmt")) yfmt = is_cpu ? '%g' : '%.0s%c'

# awk turns the CSV into numbers: configuration index, test index, io index,
# then one value per server; the lists below name them. (Strings are joined
# with ".", not sprintf, which mangles "%%" next to other arguments.)
q(s) = "'" . s . "'"
awkhead = "awk -F, 'NR == 1 { io = ($4 == \"io_threads\"); f = io ? 5 : 4; ns = (NF - f + 2) / 2 } " . \
    "NR > 1 { k = $2 \":\" $3; if (!(k in C)) { C[k] = nc++; K = K k \" \" } if (!($1 in T)) T[$1] = nt++; " . \
    "i = io ? $4 : 1; if (!(i in I)) { I[i] = ni++; L = L \" \" i } } "
data = "< " . awkhead . "NR > 1 { printf \"%d %d %d\", C[k], T[$1], I[i]; for (c = f; c < f + ns; c++) printf \" %s\", $c; print \"\" }' " . q(in)
# "servers configurations tests io-values io1 io2 ..."
counts = system(awkhead . "END { print ns, nc, nt, ni L }' " . q(in))
ns = int(word(counts, 1)); nc = int(word(counts, 2)); nt = int(word(counts, 3)); ni = int(word(counts, 4))
iov(j) = word(counts, 4 + j)
# configurations in order, "pipeline:size" each: "1:64 16:64"
cfgs = system(awkhead . "END { print K }' " . q(in))
cfgname(w) = "-P " . w[1:strstrt(w, ':') - 1] . ", -d " . w[strstrt(w, ':') + 1:]
# server names, capitalised: "Keel Redis Valkey"
servers = system("head -n 1 " . q(in) . " | awk -F, '{ f = ($4 == \"io_threads\") ? 5 : 4; ns = (NF - f + 2) / 2; " . \
    "for (c = f; c < f + ns; c++) printf \"%s%s \", toupper(substr($c, 1, 1)), substr($c, 2) }'")
# the x tics: the test names, in order
eval system("awk -F, 'NR > 1 && !($1 in T) { T[$1] = n++; s = s sep \"\\\"\" $1 \"\\\" \" T[$1]; sep = \", \" } " . \
    "END { print \"set xtics (\" s \")\" }' " . q(in))

colours = "#3b6ea8 #d9822b #4a9a5b #8e5ea2"
# bar for server s (1..ns) at io value j (1..ni): servers side by side, the
# io values of a server next to each other
nb = ns * ni
bw = 0.8 / nb
xoff(s, j) = -0.4 + bw * ((s - 1) * ni + (j - 1) + 0.5)
shade(j) = (ni > 1 ? 1.0 - 0.55 * (j - 1) / (ni - 1) : 1.0)

rows = int((nc + 1) / 2)
set terminal pngcairo size 1200, 60 + 400 * rows font ',10'
set output out
set datafile separator whitespace
set key noenhanced outside bottom center horizontal font ',9'
set style fill solid border -1
set boxwidth bw
set grid ytics
set yrange [0:*]
set xrange [-0.6:nt - 0.4]
set format y yfmt
set ylabel ylab
set xtics scale 0 noenhanced
set multiplot layout rows, 2 title sprintf("redis-benchmark -c 50: %s per test, per server and io-threads setting", ylab) noenhanced
do for [k = 1:nc] {
    set title cfgname(word(cfgs, k)) noenhanced
    plot for [s = 1:ns] for [j = 1:ni] data \
        using (int($1) == k - 1 && int($3) == j - 1 ? $2 + xoff(s, j) : NaN):(column(3 + s)) \
        with boxes fs solid shade(j) border -1 lc rgb word(colours, s) \
        title word(servers, s) . (ni > 1 || iov(1) ne "1" ? " io" . iov(j) : "")
}
unset multiplot
