# plots/separation.gp: one incident's separating metric per seed, one series per variant (bug and fix).
# Called by `lab plots` / `lab replay` as:
#   gnuplot -e "datafile='X.dat'; outfile='X.png'; plottitle='...'; metric='...'; uselog=0|1; ncols=N" plots/separation.gp
# The data file's first line names the columns: seed, then one column per variant; NaN = no value.
set terminal pngcairo size 1000,560 enhanced font "DejaVu Sans,10"
set output outfile
set title plottitle noenhanced
set xlabel "seed"
set ylabel metric noenhanced
set key outside right top noenhanced
set grid
set datafile missing "NaN"
if (uselog) { set logscale y; set format y "10^{%L}" }
plot for [i=2:ncols] datafile using 1:i title columnheader(i) with points pointsize 0.8 pointtype (i*2-2)
