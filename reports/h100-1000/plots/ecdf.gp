# plots/ecdf.gp: the distribution over seeds of one metric (an ECDF per variant and backend), with the
# criterion's bound drawn and its pass side shaded. NaN, +Inf and -Inf values sit in marked bands at the
# edges and, on a log axis, exact zeros on a marked floor, so every case is on the figure.
# Run in the figure's folder:  gnuplot -c ecdf.gp X.dat X.png X.par
#   X.dat: one block per series (x = value or band position, y = share of seeds <= x)
#   X.par: variables the lab wrote (titles, ranges, band positions and counts, threshold, legends)
# margin.gp and compare.gp set `kind` and `ylab`, then call this file with their arguments.
datafile = ARG1
outfile = ARG2
load ARG3
if (!exists("kind")) kind = "ecdf"
if (!exists("ylab")) ylab = "share of seeds with value <= x"
set terminal pngcairo size 1200,(720 + 26 * nseries) enhanced font "DejaVu Sans,15"
set output outfile
set title plottitle noenhanced font ",17" offset 0,1.6
set xlabel xlab noenhanced
set ylabel ylab noenhanced
set yrange [0:1.08]
set xrange [xmin:xmax]
set grid
set tmargin 6
set bmargin (5 + 1.3 * nseries)
set key below left Left reverse maxcols 1 noenhanced font ",14"
if (logx) { set logscale x; set format x "10^{%L}" }
lo(x) = logx ? x / 10**bandw : x - bandw
hi(x) = logx ? x * 10**bandw : x + bandw
# The pass side of the criterion, then the bands.
if (has_thr) {
    if (pass_below) { set object 1 rect from graph 0, graph 0 to first thr, graph 1 fc rgb "#e4f3e4" fs solid 1.0 noborder behind }
    if (!pass_below) { set object 1 rect from first thr, graph 0 to graph 1, graph 1 fc rgb "#e4f3e4" fs solid 1.0 noborder behind }
    set arrow 1 from first thr, graph 0 to first thr, graph 1 nohead lw 3 lc rgb "#202020" dt 2 front
    set label 1 thrlab at first thr, graph 1.025 center noenhanced font ",13" front
}
if (n_zero > 0) {
    set object 2 rect from first lo(xfloor), graph 0 to first hi(xfloor), graph 1 fc rgb "#d8e4f0" fs solid 0.9 noborder behind
    set label 2 sprintf("0 (%d)", n_zero) at first xfloor, graph 0.96 center font ",13" front
}
if (n_nan > 0) {
    set object 3 rect from first lo(xnan), graph 0 to first hi(xnan), graph 1 fc rgb "#f6d0d0" fs solid 0.9 noborder behind
    set label 3 sprintf("NaN (%d)", n_nan) at first xnan, graph 0.96 center font ",13" front
}
if (n_pinf > 0) {
    set object 4 rect from first lo(xpinf), graph 0 to first hi(xpinf), graph 1 fc rgb "#f3e0b8" fs solid 0.9 noborder behind
    set label 4 sprintf("+Inf (%d)", n_pinf) at first xpinf, graph 0.90 center font ",13" front
}
if (n_ninf > 0) {
    set object 5 rect from first lo(xninf), graph 0 to first hi(xninf), graph 1 fc rgb "#f3e0b8" fs solid 0.9 noborder behind
    set label 5 sprintf("-Inf (%d)", n_ninf) at first xninf, graph 0.90 center font ",13" front
}
set label 6 caption at graph 0.5, graph 1.085 center noenhanced font ",14" tc rgb "#303030"
if (strlen(note) > 0) { set label 7 note at graph 0.0, graph 1.025 left noenhanced font ",13" tc rgb "#b00020" }
array pal[8] = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#e6ab02", "#666666"]
if (nblocks == 0) {
    # No series has a value (every case skipped or without the metric): the legend still names them all.
    plot for [i=1:nseries] NaN with steps lw 3 lc rgb pal[(scolor[i] - 1) % 8 + 1] dt sdash[i] title stitle[i]
} else {
    plot for [i=1:nseries] datafile index (sblock[i] >= 0 ? sblock[i] : 0) \
         using 1:(sblock[i] >= 0 ? $2 : NaN) with steps lw 3 lc rgb pal[(scolor[i] - 1) % 8 + 1] dt sdash[i] title stitle[i]
}
