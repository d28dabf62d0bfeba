# Redraws 0007-harness-log-deadlock.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0007-harness-log-deadlock.dat' '0007-harness-log-deadlock.png' '0007-harness-log-deadlock.par'
