# Redraws 0006-distill-step-hang.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0006-distill-step-hang.dat' '0006-distill-step-hang.png' '0006-distill-step-hang.par'
