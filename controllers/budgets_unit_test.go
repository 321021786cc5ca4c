package controllers

// budgetsWith is DefaultBudgets changed by edit.
func budgetsWith(edit func(*Budgets)) Budgets {
	b := DefaultBudgets()
	edit(&b)
	return b
}
