package eval

import (
	"errors"
	"fmt"
	"sync"

	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/service"
)

// modelJudges resolves judges by their model (the forms of --model), def
// for a rubric that names none, each model built once.
func modelJudges(def string) metric.Judges {
	var mu sync.Mutex
	built := map[string]metric.Judge{}
	return func(name string) (metric.Judge, error) {
		if name == "" {
			name = def
		}
		if name == "" {
			return nil, errors.New("no judge model: give the rubric a judge: or the run a default judge (--judge MODEL)")
		}
		mu.Lock()
		defer mu.Unlock()
		if j, ok := built[name]; ok {
			return j, nil
		}
		spec, err := service.ParseModel(name)
		if err != nil {
			return nil, fmt.Errorf("judge: %w", err)
		}
		m, err := provider.New(spec)
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", name, err)
		}
		j := metric.ModelJudge(m)
		built[name] = j
		return j, nil
	}
}
