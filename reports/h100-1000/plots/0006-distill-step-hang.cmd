# Redraws 0006-distill-step-hang.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0006-distill-step-hang.dat' '0006-distill-step-hang.png' '0006-distill-step-hang.par'
