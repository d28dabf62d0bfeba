# Redraws 0006-distill-step-hang-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0006-distill-step-hang-margin.dat' '0006-distill-step-hang-margin.png' '0006-distill-step-hang-margin.par'
