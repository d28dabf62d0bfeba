# Redraws 0004-pow-grad-nan.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0004-pow-grad-nan.dat' '0004-pow-grad-nan.png' '0004-pow-grad-nan.par'
