# Shell helpers of the bench scripts (sourced). median: the median of the numbers on stdin, one a line
# (0 when there are none).
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# stats FILE: "median [min, max]" of the numbers in FILE, three decimals (the tables' ratio cells).
stats() { printf '%.3f [%.3f, %.3f]' "$(median <"$1")" "$(sort -n "$1" | head -1)" "$(sort -n "$1" | tail -1)"; }
