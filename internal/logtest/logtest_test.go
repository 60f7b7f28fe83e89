package logtest

import (
	"sync"
	"testing"
)

func TestRecords(t *testing.T) {
	t.Parallel()
	log, buf := New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { log.Debug("step", "i", i) })
	}
	wg.Wait()
	log.Info("done", "ok", true)
	if got := buf.Records(t, "step"); len(got) != 8 {
		t.Errorf("%d step records, want 8:\n%s", len(got), buf)
	}
	if got := buf.Records(t, "done"); len(got) != 1 || got[0]["ok"] != true || got[0]["level"] != "INFO" {
		t.Errorf("done records %v", got)
	}
}
