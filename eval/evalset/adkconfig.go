package evalset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ADK's eval config, as its pydantic model (google.adk.evaluation
// eval_config.EvalConfig; eval_metrics.BaseCriterion,
// ToolTrajectoryCriterion, RubricsBasedCriterion) defines it:
//
//	{"criteria": {"tool_trajectory_avg_score": 1.0,
//	              "response_match_score": {"threshold": 0.6},
//	              "rubric_based_final_response_quality_v1": {"threshold": 0.8,
//	                  "judge_model_options": {…}, "rubrics": [{"rubric_id": …}]}}}
//
// A criterion is a threshold, or an object with a threshold and the
// criterion's own fields (snake_case or camelCase). `adk eval` scores only
// the criteria listed; without a config file it uses tool_trajectory_avg_score
// 1.0 and response_match_score 0.8.

// The criteria of ADK's eval config that baton eval scores.
const (
	adkTrajectory = "tool_trajectory_avg_score"
	adkResponse   = "response_match_score"
)

// adkRubricCriteria are ADK's rubric-based criteria: each judges the
// evalset's rubrics (and its own), which baton's judge does in one.
var adkRubricCriteria = []string{
	"rubric_based_final_response_quality_v1",
	"rubric_based_tool_use_quality_v1",
	"rubric_based_multi_turn_trajectory_quality_v1",
}

// ADKConfig is what baton eval reads of an ADK eval config
// (test_config.json beside an evalset): which expectations the converted
// cases get.
type ADKConfig struct {
	// Trajectory is set when tool_trajectory_avg_score is listed: each
	// turn expects its tool uses (and its transfer_to_agent calls as
	// transfers). Its threshold is not used: each turn's trajectory must
	// match, where ADK compares the average over invocations with it.
	Trajectory bool
	// Match is tool_trajectory_avg_score's match_type: exact (ADK's
	// default), in_order or any_order.
	Match string
	// ResponseMatch is response_match_score's threshold, the ROUGE-1
	// threshold of each turn's final response; nil when it is not listed,
	// and then no turn expects a ROUGE-1 score.
	ResponseMatch *float64
	// Rubrics is set when a rubric_based_* criterion is listed: the
	// evalset's rubrics are judged, at RubricThreshold (0: the rubric
	// default), and so are ConfigRubrics, on every turn.
	Rubrics         bool
	RubricThreshold float64
	ConfigRubrics   []Rubric
	// Ignored names the listed criteria baton eval does not score.
	Ignored []string
}

// DefaultADKConfig is the config `adk eval` uses without a config file:
// tool_trajectory_avg_score 1.0 (exact) and response_match_score 0.8.
func DefaultADKConfig() *ADKConfig {
	th := DefaultROUGE1Threshold
	return &ADKConfig{Trajectory: true, Match: MatchExact, ResponseMatch: &th}
}

// Warnings are the config's criteria that baton eval does not score, as
// sentences.
func (c *ADKConfig) Warnings() []string {
	var out []string
	for _, name := range c.Ignored {
		out = append(out, fmt.Sprintf("ADK criterion %s is not scored by baton eval", name))
	}
	return out
}

// ParseADKConfig reads an ADK eval config. A malformed one is an *[Error]
// with lines: a criterion that is neither a threshold nor an object, a
// threshold outside [0, 1], an unknown match_type, a malformed rubric.
func ParseADKConfig(data []byte, name string) (*ADKConfig, error) {
	ps := problems{locate: func(p string) int { return jsonLine(data, p) }}
	var top adkObject
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Line: jsonErrorLine(data, err), Message: "not an ADK eval config (a JSON object): " + jsonMessage(err)}}}
	}
	var criteria map[string]json.RawMessage
	top.field(&ps, "$", "criteria", &criteria, false)
	c := &ADKConfig{Match: MatchExact}
	names := make([]string, 0, len(criteria))
	for k := range criteria {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		raw := criteria[k]
		p := "$.criteria." + k
		th, has, obj, ok := adkCriterion(raw, p, k, &ps)
		if !ok {
			continue
		}
		switch {
		case k == adkTrajectory:
			c.Trajectory = true
			if obj != nil {
				if m, ok := obj.raw("match_type"); ok {
					c.Match = adkMatch(m, p+".match_type", &ps)
				}
			}
		case k == adkResponse:
			v := DefaultROUGE1Threshold
			if has {
				v = th
			}
			c.ResponseMatch = &v
		case slices.Contains(adkRubricCriteria, k):
			c.Rubrics = true
			if has && (c.RubricThreshold == 0 || th < c.RubricThreshold) {
				c.RubricThreshold = th
			}
			var rs []adkObject
			if obj != nil && obj.list(&ps, p, "rubrics", &rs, false) {
				for _, r := range adkRubrics(rs, p+".rubrics", &ps) {
					if has {
						r.Threshold = th
					}
					c.ConfigRubrics = append(c.ConfigRubrics, r)
				}
			}
		default:
			c.Ignored = append(c.Ignored, k)
		}
	}
	if err := ps.err(name); err != nil {
		return nil, err
	}
	return c, nil
}

// adkCriterion reads a criterion: a threshold, or an object with one
// (has is false when it has none). ok is false when it is malformed.
func adkCriterion(raw json.RawMessage, p, name string, ps *problems) (th float64, has bool, obj adkObject, ok bool) {
	switch {
	case string(raw) != "null" && json.Unmarshal(raw, &th) == nil:
		has = true
	case json.Unmarshal(raw, &obj) == nil && obj != nil:
		if _, set := obj.raw("threshold"); set {
			if !obj.field(ps, p, "threshold", &th, false) {
				return 0, false, nil, false
			}
			has = true
			p += ".threshold"
		}
	default:
		ps.add(p, "%s: want a threshold (a number) or an object with one", name)
		return 0, false, nil, false
	}
	if has && !unit(th) {
		ps.add(p, "%s: threshold %v: want a number from 0 to 1", name, th)
		return 0, false, nil, false
	}
	return th, has, obj, true
}

// adkMatch reads a match_type as ADK's ToolTrajectoryCriterion does: its
// enum's value (0, 1, 2) or name, in any case, with - or a space for _.
func adkMatch(raw json.RawMessage, p string, ps *problems) string {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		if n >= 0 && n < len(adkMatches) {
			return adkMatches[n]
		}
	} else {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			s = strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
			if m, ok := NormalizeMatch(s); ok && s != "" {
				return m
			}
		}
	}
	ps.add(p, "match_type %s: want EXACT, IN_ORDER or ANY_ORDER (or 0, 1, 2)", raw)
	return MatchExact
}

// adkMatches are ADK's MatchType values in order: EXACT = 0, IN_ORDER = 1,
// ANY_ORDER = 2.
var adkMatches = []string{MatchExact, MatchInOrder, MatchAnyOrder}

// loadADKConfig reads the test_config.json beside an ADK evalset; nil when
// there is none.
func loadADKConfig(evalsetPath string) (*ADKConfig, error) {
	path := filepath.Join(filepath.Dir(evalsetPath), "test_config.json")
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evalset: %w", err)
	}
	return ParseADKConfig(data, path)
}
