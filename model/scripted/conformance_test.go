package scripted_test

import (
	"testing"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/modeltest"
	"github.com/batonhq/baton/model/scripted"
)

// TestConformance runs the suite every Model passes. The scripted model has
// no connection to stall, so it skips that scenario.
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, sc modeltest.Scenario) model.Model {
		switch sc.Kind {
		case modeltest.KindText:
			return scripted.New("conformance", []scripted.Step{{Text: sc.Text}}, scripted.Options{ChunkWords: 2})
		case modeltest.KindToolCalls:
			st := scripted.Step{}
			for _, c := range sc.Calls {
				st.ToolCalls = append(st.ToolCalls, scripted.Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
			return scripted.New("conformance", []scripted.Step{st}, scripted.Options{})
		}
		return nil
	})
}
