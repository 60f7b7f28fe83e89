package memory_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/memory"
)

func ExampleSet() {
	doc := "# Notes\nThe user prefers metric units.\n"
	doc, _ = memory.Set(doc, "### Refund for order 1142\n- Refund approved, waiting for the bank.")
	fmt.Print(doc)
	doc, _ = memory.Clear(doc)
	fmt.Println("---")
	fmt.Print(doc)
	// Output:
	// # Notes
	// The user prefers metric units.
	//
	// <current_thread_summary>
	// ### Refund for order 1142
	// - Refund approved, waiting for the bank.
	// </current_thread_summary>
	// ---
	// # Notes
	// The user prefers metric units.
	//
	// <current_thread_summary>
	// No summary of a previous thread is pending.
	// </current_thread_summary>
}

func ExampleRepair() {
	doc := "notes\n<current_thread_summary>\nhalf-written block, never closed\n"
	if _, err := memory.Parse(doc); err != nil {
		fmt.Println("strict:", err)
	}
	fixed, fixes := memory.Repair(doc)
	fmt.Println("fixes:", fixes)
	fmt.Printf("%q\n", fixed)
	// Output:
	// strict: memory: opening marker without a closing marker at line 2 (byte 6)
	// fixes: [escaped <current_thread_summary> at byte 6: memory: opening marker without a closing marker]
	// "notes\n&lt;current_thread_summary&gt;\nhalf-written block, never closed\n"
}

func ExampleUpdate() {
	ctx := context.Background()
	var s memory.Map
	_, wrote, err := memory.Update(ctx, &s, "owner", "support", 0, func(content string) (string, bool, error) {
		next, err := memory.Set(content, "summary of thread 7")
		return next, err == nil, err
	})
	doc, _ := s.Get(ctx, "owner", "support")
	fmt.Println(wrote, err, doc.Version)
	// Output:
	// true <nil> 1
}
