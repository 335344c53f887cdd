# Bytes per key (used_memory growth / keys) for every server, value size and
# TTL setting, from the CSV of bench/memory.sh: one group of bars per case,
# one bar per server.
# Usage, from the repository root:
#
#   gnuplot -e "in='bench/results/memory.csv'; out='docs/img/memory-per-key.png'" bench/plot_memory.gp
#
# Input: server,value_size,ttl,used_bytes_per_key,rss_bytes_per_key,...
if (!exists("in")) in = 'bench/results/memory.csv'
if (!exists("out")) out = 'docs/img/memory-per-key.png'

q(s) = "'" . s . "'"
# One row per case ("16 B", "16 B TTL", ...), one column per server in the
# order of the file; the header row names the servers.
prog = 'NR == 1 { next } ' . \
    '{ if (!($1 in S)) { S[$1] = ++ns; SN[ns] = $1 }; c = $2 " B" ($3 == 1 ? " TTL" : ""); ' . \
    '  if (!(c in C)) { C[c] = ++nc; CN[nc] = c }; V[C[c], S[$1]] = $4 } ' . \
    'END { printf "case"; for (s = 1; s <= ns; s++) printf " %s", SN[s]; print ""; ' . \
    '  for (c = 1; c <= nc; c++) { printf "\"%s\"", CN[c]; for (s = 1; s <= ns; s++) printf " %s", V[c, s]; print "" } }'
src = "< awk -F, " . q(prog) . " " . in
nservers = int(system("awk -F, " . q('NR > 1 && !($1 in S) { S[$1] = 1; n++ } END { print n }') . " " . in))

set terminal pngcairo size 900,480 font ",10"
set output out
set title "Memory per key, 1M keys (16-byte keys): used\\_memory growth / keys (lower is better)"
set ylabel "bytes per key"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left
set grid ytics
set yrange [0:*]
plot for [i = 2:nservers + 1] src using i:xtic(1) title columnheader(i)
