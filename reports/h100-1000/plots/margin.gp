# plots/margin.gp: each error metric of an incident as a fraction of its tolerance, so every incident reads on
# one scale: 1.0 is the criterion's line, below it passes; the distance to 1 is the fix's margin.
# Run in the figure's folder:  gnuplot -c margin.gp X.dat X.png X.par   (the drawing is ecdf.gp's)
kind = "margin"
ylab = "share of seeds with value / tolerance <= x"
call "ecdf.gp" ARG1 ARG2 ARG3
