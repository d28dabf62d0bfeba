# plots/xy.gp: series against the first column of a data file (per-seed metrics, studies, curves).
# Called by lab_gnuplot_xy() as:
#   gnuplot -e "datafile='X.dat'; outfile='X.png'; plottitle='...'; xlab='...'; ylab='...'; logx=0|1;
#               logy=0|1; uselines=0|1; ncols=N" plots/xy.gp
# The data file's first line names the columns: x, then one column per series; NaN = no value.
set terminal pngcairo size 1000,560 enhanced font "DejaVu Sans,10"
set output outfile
set title plottitle noenhanced
set xlabel xlab noenhanced
set ylabel ylab noenhanced
set key outside right top noenhanced
set grid
set datafile missing "NaN"
if (logx) { set logscale x }
if (logy) { set logscale y; set format y "10^{%L}" }
if (uselines) {
    plot for [i=2:ncols] datafile using 1:i title columnheader(i) with linespoints pointsize 0.5 pointtype (i*2-2)
} else {
    plot for [i=2:ncols] datafile using 1:i title columnheader(i) with points pointsize 0.8 pointtype (i*2-2)
}
