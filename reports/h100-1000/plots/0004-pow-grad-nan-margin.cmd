# Redraws 0004-pow-grad-nan-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0004-pow-grad-nan-margin.dat' '0004-pow-grad-nan-margin.png' '0004-pow-grad-nan-margin.par'
