# Shared by the A/B scripts of bench/ (sourced, not run): each side's linkd
# in $tmp, built from a revision in a worktree of its own, or a binary
# taken as it is (the caller sets tmp), and the medians they print.

# build_side SIDE REV [ENV]: $tmp/linkd-SIDE from REV, a revision (built
# with the environment assignments ENV, e.g. CGO_ENABLED=0) or the path of
# a linkd binary.
build_side() {
  if [ -x "$2" ] && [ -f "$2" ]; then
    cp "$2" "$tmp/linkd-$1"
    return
  fi
  git worktree add -q --detach "$tmp/$1-src" "$2"
  (cd "$tmp/$1-src" && env ${3:-} go build -o "$tmp/linkd-$1" ./cmd/linkd)
}

# remove_sides: the sides' worktrees and $tmp (for an EXIT trap).
remove_sides() {
  git worktree remove --force "$tmp/a-src" 2>/dev/null
  git worktree remove --force "$tmp/b-src" 2>/dev/null
  rm -rf "$tmp"
}

# median: the median of the numbers on standard input, one per line (the
# mean of the middle two, to three decimals, for an even count).
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : sprintf("%.3f", (a[NR/2]+a[NR/2+1])/2))}'; }
