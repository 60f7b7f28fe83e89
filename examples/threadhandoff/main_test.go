package main

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestThreadHandoffExample runs the example as `go run` does, from the
// repository's root: parent → proposal → edit → approval → the child's
// first turn at billing with the summary, then the seed cleared.
func TestThreadHandoffExample(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	var out bytes.Buffer
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	const want = `parent: billing answered: I can see two charges of 49.90 EUR on order 1234. The second one is a duplicate; I have flagged it and it will be reversed within 3-5 days.
proposal (pending, billing takes over):
  ### Double charge on order 1234
  
  - The customer was charged twice (2 x 49.90 EUR) for order 1234.
  - Billing looked the order up and confirmed the second charge is a duplicate.
  - The duplicate charge is flagged and will be reversed within 3-5 days.
  
  **TL;DR:** Duplicate charge on order 1234 flagged; the reversal is due within 3-5 days.
approved (edited true): child thread "Double charge on order 1234, refund promised", a child of the parent: true
billing's prompt on the child holds the summary: true (placeholder: false)
child's first turn: starts at billing (thread handoff)
child's first turn: billing answered: I can see two charges of 49.90 EUR on order 1234. The second one is a duplicate; I have flagged it and it will be reversed within 3-5 days.
billing's prompt on the child holds the summary: false (placeholder: true)
child's metadata.handoff: pending false, last_cleanup_at set true
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
