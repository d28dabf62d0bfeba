# Redraws 0002-crf-atomic-drift.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0002-crf-atomic-drift.dat' '0002-crf-atomic-drift.png' '0002-crf-atomic-drift.par'
