# Redraws 0004-pow-grad-nan.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0004-pow-grad-nan.dat' '0004-pow-grad-nan.png' '0004-pow-grad-nan.par'
