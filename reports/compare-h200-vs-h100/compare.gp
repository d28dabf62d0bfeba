# plots/compare.gp: one metric of one incident in two reports (A solid, B dashed; two GPUs, two builds):
# both distributions over seeds, the criterion's bound, and the statistics that moved noted in red.
# Run in the figure's folder:  gnuplot -c compare.gp X.dat X.png X.par   (the drawing is ecdf.gp's)
kind = "compare"
ylab = "share of seeds with value <= x (A solid, B dashed)"
call "ecdf.gp" ARG1 ARG2 ARG3
