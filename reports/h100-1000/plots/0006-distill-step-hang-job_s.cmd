# Redraws 0006-distill-step-hang-job_s.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0006-distill-step-hang-job_s.dat' '0006-distill-step-hang-job_s.png' '0006-distill-step-hang-job_s.par'
