package server

// SetMaxCatchUp sets the messages a thread stream's catch-up reads at once
// (a page of a replay) and returns the function that restores it. Only for
// tests that do not run in parallel.
func SetMaxCatchUp(n int) (restore func()) {
	old := maxCatchUp
	maxCatchUp = n
	return func() { maxCatchUp = old }
}
