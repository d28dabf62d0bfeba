# Redraws 0006-distill-step-hang-job_s.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0006-distill-step-hang-job_s.dat' '0006-distill-step-hang-job_s.png' '0006-distill-step-hang-job_s.par'
