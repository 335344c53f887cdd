# Payload Gbit/s against value size (log scale) for every server and
# io-threads setting, from the CSV of bench/large_values.sh (run with
# --io-threads LIST): GET on the left, SET on the right, one line per server
# and io-threads value (a colour per server, paler for each further
# io-threads value), the stand-in's GET dashed in both (SET is compared
# with it in the tables too). Each point is the median of the --reps runs.
# Usage, from the repository root:
#
#   gnuplot -e "in='bench/results/large_values.csv'; out='docs/img/large-values-iothreads.png'" bench/plot_large_values.gp
#
# Input: server,size,op,gbps,...,rep,io_threads (a CSV without the
# io_threads column counts as io-threads 1).
if (!exists("in")) in = 'bench/results/large_values.csv'
if (!exists("out")) out = 'docs/img/large-values-iothreads.png'

q(s) = "'" . s . "'"
# The awk program below (no single quotes in it: the shell gets it in a
# pair of them) prints, for one op (-v op=get|set), one data block per
# series, two blank lines apart:
# a title line, then "bytes gbps colour pointtype" per size (median Gbit/s).
# Series: the stand-in first, then each server in the order of the file,
# its io-threads values ascending. With -v mode=tics it prints the
# "set xtics" command for the sizes instead.
prog = 'function bytes(s, n) { n = s + 0; if (s ~ /[kK]$/) n *= 1024; else if (s ~ /[mM]$/) n *= 1048576; return n } ' . \
    'function med(k, n, i, j, t, v) { n = split(V[k], v, " "); ' . \
    '  for (i = 2; i <= n; i++) { t = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > t; j--) v[j + 1] = v[j]; v[j + 1] = t }; ' . \
    '  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 } ' . \
    'NR == 1 { for (c = 1; c <= NF; c++) if ($c == "io_threads") ioc = c; next } ' . \
    '{ io = ($1 == "standin") ? "-" : (ioc ? $ioc : 1); if (io != "-" && io != 1) multi = 1; ' . \
    '  if ($1 != "standin" && !($1 in S)) { S[$1] = ++ns; SN[ns] = $1 }; ' . \
    '  if (io != "-" && !(io in I)) { I[io] = 1; IOS[++ni] = io }; ' . \
    '  if (!($2 in Z)) { Z[$2] = 1; SZ[++nz] = $2 }; ' . \
    '  if ($3 != op && $1 != "standin") next; ' . \
    '  k = $1 SUBSEP io SUBSEP $2; V[k] = V[k] " " $4 } ' . \
    'END { split("3b6ea8 d9822b 4a9a5b 8e5ea2", H, " "); ' . \
    '  for (i = 1; i <= ni; i++) for (j = i + 1; j <= ni; j++) if (IOS[j] + 0 < IOS[i] + 0) { t = IOS[i]; IOS[i] = IOS[j]; IOS[j] = t }; ' . \
    '  for (i = 1; i <= nz; i++) for (j = i + 1; j <= nz; j++) if (bytes(SZ[j]) < bytes(SZ[i])) { t = SZ[i]; SZ[i] = SZ[j]; SZ[j] = t }; ' . \
    '  if (mode == "tics") { for (i = 1; i <= nz; i++) { s = SZ[i]; l = (s ~ /[kK]$/) ? substr(s, 1, length(s) - 1) " KB" : (s ~ /[mM]$/) ? substr(s, 1, length(s) - 1) " MB" : s " B"; ' . \
    '      printf "%s\"%s\" %d", (i > 1 ? ", " : "set xtics ("), l, bytes(s) }; print ")"; exit }; ' . \
    '  if (("standin" SUBSEP "-" SUBSEP SZ[1]) in V) { print "\"stand-in (GET)\""; ' . \
    '    for (i = 1; i <= nz; i++) { k = "standin" SUBSEP "-" SUBSEP SZ[i]; if (k in V) print bytes(SZ[i]), med(k), 8421504, 6 }; print ""; print "" }; ' . \
    '  for (s = 1; s <= ns; s++) { base = H[(s - 1) % 4 + 1]; for (i = 1; i <= ni; i++) { ' . \
    '    f = ni > 1 ? 0.55 * (i - 1) / (ni - 1) : 0; c = 0; for (b = 0; b < 3; b++) { x = 0; for (d = 1; d <= 2; d++) x = x * 16 + index("0123456789abcdef", substr(base, 2 * b + d, 1)) - 1; c = c * 256 + int(x + (255 - x) * f) }; ' . \
    '    name = toupper(substr(SN[s], 1, 1)) substr(SN[s], 2) (multi ? " io" IOS[i] : ""); n = 0; ' . \
    '    for (z = 1; z <= nz; z++) { k = SN[s] SUBSEP IOS[i] SUBSEP SZ[z]; if (k in V) { if (!n++) print "\"" name "\""; print bytes(SZ[z]), med(k), c, 7 - 2 * ((i - 1) % 3) } }; ' . \
    '    if (n) { print ""; print "" } } } }'
series(op) = "awk -F, -v op=" . op . " " . q(prog) . " " . q(in)
# how many blocks (series) a panel has: count the title lines
nblocks(op) = int(system(series(op) . " | awk '$1 !~ /^[0-9.]/ && NF > 0 { n++ } END { print n + 0 }'"))
eval system("awk -F, -v mode=tics " . q(prog) . " " . q(in))

set terminal pngcairo size 1200, 480 font ',10'
set output out
dts(b) = b == 0 ? 2 : 1
set datafile separator whitespace
set logscale x 2
set offsets graph 0.04, graph 0.04, 0, 0
set grid xtics ytics
set yrange [0:*]
set xlabel 'value size'
set ylabel 'payload Gbit/s'
set key noenhanced top right font ',9' opaque
set multiplot layout 1, 2 title "large values: loadgen -c 8, payload Gbit/s by value size (median of the runs)" noenhanced
do for [op in "get set"] {
    set title (op eq "get" ? "GET" : "SET") noenhanced
    n = nblocks(op)
    src = "< " . series(op)
    # extra columns: point type, then colour; the stand-in (block 0) dashed
    plot for [b = 0:n - 1] src index b using 1:2:4:3 \
        with linespoints lw 2 pt variable lc rgb variable ps 1.2 dt dts(b) title columnheader(1)
}
unset multiplot
