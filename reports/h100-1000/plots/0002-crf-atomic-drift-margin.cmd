# Redraws 0002-crf-atomic-drift-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0002-crf-atomic-drift-margin.dat' '0002-crf-atomic-drift-margin.png' '0002-crf-atomic-drift-margin.par'
