# plots/xy.gp: series against the first column of a data file, as points (a scatter: a study against a
# parameter). Run in the figure's folder:  gnuplot -c xy.gp X.dat X.png X.par
# X.dat's first line names the columns: x, then one column per series; NaN = no value.
# X.par (written by the lab) sets plottitle, xlab, ylab, logx, logy, ncols.
datafile = ARG1
outfile = ARG2
load ARG3
set terminal pngcairo size 1200,720 enhanced font "DejaVu Sans,15"
set output outfile
set title plottitle noenhanced
set xlabel xlab noenhanced
set ylabel ylab noenhanced
set key below noenhanced font ",13"
set grid
set datafile missing "NaN"
if (logx) { set logscale x }
if (logy) { set logscale y; set format y "10^{%L}" }
plot for [i=2:ncols] datafile using 1:i title columnheader(i) with points pointsize 1.4 pointtype (i*2-2)
