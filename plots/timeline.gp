# plots/timeline.gp: a per-rank Gantt of collectives (incident 0006): each bar is one collective a rank was
# in, from entering to leaving (bcast, gather, scatter, finalize by colour; red: never left); the dashed
# line is the first sequence number the ranks did not all reach (the stall).
# Run in the figure's folder:  gnuplot -c timeline.gp X.dat X.png X.par
# X.dat rows: rank t_enter_s t_leave_s op seq completed. X.par: plottitle, caption, world, t_stall (-1: none).
datafile = ARG1
outfile = ARG2
load ARG3
set terminal pngcairo size 1200,(420 + 70 * world) enhanced font "DejaVu Sans,15"
set output outfile
set title plottitle noenhanced font ",17" offset 0,1.4
set tmargin 6
set label 6 caption at graph 0.5, graph 1.06 center noenhanced font ",13" tc rgb "#303030"
set xlabel "seconds since the job started"
set ylabel "rank"
set yrange [-0.7:world - 0.3]
set ytics 1
set grid x
set key below horizontal noenhanced font ",14"
set style fill solid 0.85 noborder
if (t_stall >= 0) {
    set arrow 1 from first t_stall, graph 0 to first t_stall, graph 1 nohead lw 3 lc rgb "#b00020" dt 2 front
    set label 1 "stall" at first t_stall, graph 1.01 center tc rgb "#b00020" front
}
opcol(op, done) = done == 0 ? 0xd62728 : op == 1 ? 0x1f77b4 : op == 2 ? 0x2ca02c : op == 3 ? 0xff7f0e : 0x7f7f7f
plot datafile using (($2 + $3) / 2):1:(($3 - $2) / 2 > 0.0005 ? ($3 - $2) / 2 : 0.0005):(0.32):(opcol($4, $6)) \
         with boxxyerror lc rgb variable notitle, \
     NaN with boxes lc rgb "#1f77b4" title "bcast", NaN with boxes lc rgb "#2ca02c" title "gather", \
     NaN with boxes lc rgb "#ff7f0e" title "scatter", NaN with boxes lc rgb "#7f7f7f" title "finalize", \
     NaN with boxes lc rgb "#d62728" title "never left (hung)"
