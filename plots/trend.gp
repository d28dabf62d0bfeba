# plots/trend.gp: each fix's margin to its tolerance across reports in time order (date, device, commit): the
# worst value over seeds divided by the tolerance, per report; 1.0 is the line, a climb toward it is drift.
# Run in the figure's folder:  gnuplot -c trend.gp trend.dat trend.png trend.par
datafile = ARG1
outfile = ARG2
load ARG3
set terminal pngcairo size 1200,(760 + 26 * nseries) enhanced font "DejaVu Sans,15"
set output outfile
set title plottitle noenhanced font ",17"
set ylabel "worst value / tolerance (below 1 passes)"
set logscale y
set format y "10^{%L}"
set grid
set xrange [0.5:nreports + 0.5]
set xtics () font ",12"
do for [i=1:nreports] { set xtics add (rlabel[i] i) }
set xtics rotate by 12 right noenhanced
set bmargin (6 + 1.3 * nseries)
set key below left Left reverse maxcols 1 noenhanced font ",14"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lw 3 lc rgb "#202020" dt 2 front
set label 1 "tolerance (1.0)" at graph 0.01, first 1.4 left font ",13"
plot for [i=1:nseries] datafile index (i - 1) using 1:2 with linespoints lw 3 pointsize 1.6 title stitle[i]
