#!/usr/bin/perl
# Perl accuracy workload: hashes, arrays and strings.
# Run as: PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 perl hashes.pl [N]
# (fixed hash seed and no key-order perturbation: deterministic allocations)
use strict;
use warnings;

my $n = shift // 100000;
my $seed = 42;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed / 2147483648; }

# 1. a big hash of array refs
my %h;
for my $i (1 .. $n) {
    $h{sprintf("key%07d", $i)} = [ $i, rnd(), "v" x (1 + $i % 40) ];
}

# 2. word counts over a generated text
my @vocab = map { sprintf("w%04d", $_) } 0 .. 4999;
my %count;
for (1 .. $n) {
    my $w = $vocab[int(rnd() * rnd() * @vocab)];
    $count{$w}++;
}

# 3. strings: build, split, join, substitute
my @lines;
for my $i (1 .. $n / 4) {
    push @lines, join(",", map { "f$_=" . ($i * $_) } 1 .. 8);
}
my $text = join("\n", @lines);
my $fields = 0;
for my $line (split /\n/, $text) {
    my %rec = map { split /=/, $_, 2 } split /,/, $line;
    $fields += keys %rec;
}
(my $shouty = $text) =~ s/f(\d)=/F$1:/g;

# 4. hash of hashes, sort, then delete half
my %groups;
while (my ($k, $v) = each %h) {
    $groups{ $v->[0] % 101 }{$k} = $v->[1];
}
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 9];
for my $i (grep { $_ % 2 } 1 .. $n) {
    delete $h{ sprintf("key%07d", $i) };
}

# 5. arrays: push, splice, reverse, sorting numbers
my @a = map { int(rnd() * 1_000_000) } 1 .. $n;
my @sorted = sort { $a <=> $b } @a;
splice(@sorted, 0, $n / 2);
my @rev = reverse @sorted;

printf "%d %d %d %d %d %d %s\n", scalar(keys %h), scalar(keys %count), $fields,
    length($shouty), scalar(keys %groups), scalar(@rev), join(",", @top[0 .. 2]);
