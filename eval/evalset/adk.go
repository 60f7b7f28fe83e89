package evalset

import (
	"encoding/json"
	"slices"
	"strings"
)

// ADK's evalset JSON, as its pydantic models (google.adk.evaluation
// eval_set.EvalSet, eval_case.EvalCase, Invocation, IntermediateData,
// InvocationEvents; google.genai types Content, Part, FunctionCall,
// FunctionResponse; eval_rubrics.Rubric) define it:
//
//	{"eval_set_id": "…", "name": "…", "description": "…",
//	 "eval_cases": [{"eval_id": "…",
//	   "conversation": [{"invocation_id": "…",
//	     "user_content": {"role": "user", "parts": [{"text": "…"}]},
//	     "final_response": {"role": "model", "parts": [{"text": "…"}]},
//	     "intermediate_data": {"tool_uses": [{"id": "…", "name": "…", "args": {…}}],
//	                           "tool_responses": [{"id": "…", "name": "…", "response": {…}}],
//	                           "intermediate_responses": [["agent", [{"text": "…"}]]]}
//	       or {"invocation_events": [{"author": "…", "content": {"parts": [{"function_call": …}]}}]},
//	     "rubrics": [{"rubric_id": "…", "rubric_content": {"text_property": "…"}}]}],
//	   "session_input": {"app_name": "…", "user_id": "…", "state": {}},
//	   "rubrics": […]}]}
//
// Every model but EvalSet reads its fields in snake_case or camelCase
// (pydantic's alias generator); this reader accepts both everywhere.

// ParseADK reads an ADK evalset scored as `adk eval` scores it without a
// config file ([DefaultADKConfig]); see [ParseADKWith].
func ParseADK(data []byte, name string) (*Set, error) {
	return ParseADKWith(data, name, nil)
}

// ParseADKWith reads an ADK evalset: each eval case becomes a case, each
// invocation a turn whose expectations are the criteria of config (nil is
// [DefaultADKConfig]): with tool_trajectory_avg_score the tool trajectory
// (tool_uses, matched by its match_type with their arguments; calls of
// ADK's transfer_to_agent are the transfer trajectory instead), with
// response_match_score the final response (ROUGE-1 at its threshold), with
// a rubric_based_* criterion the rubrics (the invocation's, the case's and
// the criterion's, judged with the run's default judge). Recorded tool
// responses become the case's recording, so that they answer the tools,
// whatever the criteria; a case with a conversation_scenario (ADK's user
// simulator) is refused. A malformed evalset is an *[Error] with lines.
func ParseADKWith(data []byte, name string, config *ADKConfig) (*Set, error) {
	if config == nil {
		config = DefaultADKConfig()
	}
	ps := problems{locate: func(p string) int { return jsonLine(data, p) }}
	var top adkObject
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Line: jsonErrorLine(data, err), Message: "not an ADK evalset (a JSON object): " + jsonMessage(err)}}}
	}
	s := &Set{Version: Version}
	var id string
	top.str(&ps, "$", "eval_set_id", &id, true)
	top.str(&ps, "$", "name", &s.Name, false)
	top.str(&ps, "$", "description", &s.Description, false)
	if s.Name == "" {
		s.Name = id
	}
	var cases []adkObject
	top.list(&ps, "$", "eval_cases", &cases, true)
	for i, rc := range cases {
		p := at("$.eval_cases", i)
		c := adkCase(rc, p, config, &ps)
		c.Line = jsonLine(data, p)
		s.Cases = append(s.Cases, c)
	}
	if err := ps.err(name); err != nil {
		return nil, err
	}
	// The converted set's own problems (an empty user message, a duplicate
	// id) are reported at their case's line in the ADK file.
	vs := problems{locate: func(p string) int {
		if i, ok := caseIndex(p); ok && i < len(s.Cases) {
			return s.Cases[i].Line
		}
		return 0
	}}
	validateSet(s, &vs, func(i int) string { return at("$.cases", i) })
	if err := vs.err(name); err != nil {
		return nil, err
	}
	return s, nil
}

// adkObject is a JSON object of an ADK model.
type adkObject map[string]json.RawMessage

// has reports whether o has a field, in snake_case or camelCase.
func has(o map[string]json.RawMessage, key string) bool {
	_, ok := o[key]
	if !ok {
		_, ok = o[camel(key)]
	}
	return ok
}

// raw returns a field that is present and not null.
func (o adkObject) raw(key string) (json.RawMessage, bool) {
	v, ok := o[key]
	if !ok {
		v, ok = o[camel(key)]
	}
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// field decodes a field into v; a missing one is a problem if required.
func (o adkObject) field(ps *problems, p, key string, v any, required bool) bool {
	raw, ok := o.raw(key)
	if !ok {
		if required {
			ps.add(p+"."+key, "%s is required", key)
		}
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		ps.add(p+"."+key, "%s: %s", key, jsonMessage(err))
		return false
	}
	return true
}

func (o adkObject) str(ps *problems, p, key string, v *string, required bool) bool {
	return o.field(ps, p, key, v, required)
}

func (o adkObject) list(ps *problems, p, key string, v *[]adkObject, required bool) bool {
	return o.field(ps, p, key, v, required)
}

func adkCase(o adkObject, p string, config *ADKConfig, ps *problems) Case {
	var c Case
	o.str(ps, p, "eval_id", &c.ID, true)
	if _, ok := o.raw("conversation_scenario"); ok {
		ps.add(p+".conversation_scenario", "case %q: conversation_scenario needs ADK's user simulator; baton eval runs static conversations (conversation:)", c.ID)
		return c
	}
	var rubrics []Rubric
	var rs []adkObject
	if o.list(ps, p, "rubrics", &rs, false) {
		rubrics = adkRubrics(rs, p+".rubrics", ps)
	}
	if !config.Rubrics {
		rubrics = nil
	}
	rubrics = append(withThreshold(rubrics, config.RubricThreshold), config.ConfigRubrics...)
	var invs []adkObject
	o.list(ps, p, "conversation", &invs, true)
	rec := &Recording{Version: RecordingVersion, Source: "adk"}
	recorded := false
	for i, inv := range invs {
		t, out := adkInvocation(inv, at(p+".conversation", i), config, ps)
		if len(rubrics) > 0 {
			if t.Expect == nil {
				t.Expect = &Expect{}
			}
			if t.Expect.Answer == nil {
				t.Expect.Answer = &AnswerExpect{}
			}
			t.Expect.Answer.Rubrics = append(t.Expect.Answer.Rubrics, rubrics...)
		}
		c.Turns = append(c.Turns, t)
		rec.Turns = append(rec.Turns, out)
		recorded = recorded || len(out.Tools) > 0
	}
	if recorded {
		c.Recording = rec
	}
	return c
}

// adkInvocation returns an invocation as a turn, and the tool results it
// recorded as an outcome.
func adkInvocation(o adkObject, p string, config *ADKConfig, ps *problems) (Turn, Outcome) {
	var t Turn
	var out Outcome
	var user adkObject
	if o.field(ps, p, "user_content", &user, true) {
		t.User = adkText(user, p+".user_content", ps)
		if strings.TrimSpace(t.User) == "" {
			ps.add(p+".user_content", "user_content has no text part")
		}
	}
	e := &Expect{}
	var final adkObject
	if o.field(ps, p, "final_response", &final, false) {
		if text := adkText(final, p+".final_response", ps); strings.TrimSpace(text) != "" && config.ResponseMatch != nil {
			e.Answer = &AnswerExpect{ROUGE1: &ROUGE1{Reference: text, Threshold: *config.ResponseMatch}}
		}
	}
	var inter adkObject
	if o.field(ps, p, "intermediate_data", &inter, false) {
		calls, results := adkIntermediate(inter, p+".intermediate_data", ps)
		var transfers []TransferExpect
		calls = slices.DeleteFunc(calls, func(c ToolCallExpect) bool {
			to, ok := c.Args["agent_name"].(string)
			if c.Name != adkTransfer || !ok {
				return false
			}
			transfers = append(transfers, TransferExpect{To: to})
			return true
		})
		if config.Trajectory {
			e.Tools = &ToolsExpect{Match: config.Match, Calls: calls}
			if len(transfers) > 0 {
				e.Transfers = &transfers
			}
		}
		out.Tools = results
	}
	var rs []adkObject
	if o.list(ps, p, "rubrics", &rs, false) {
		if rubrics := adkRubrics(rs, p+".rubrics", ps); config.Rubrics {
			if e.Answer == nil {
				e.Answer = &AnswerExpect{}
			}
			e.Answer.Rubrics = withThreshold(rubrics, config.RubricThreshold)
		}
	}
	if e.Answer != nil || e.Tools != nil || e.Transfers != nil {
		t.Expect = e
	}
	return t, out
}

// adkTransfer is ADK's agent transfer function: its calls are transfers
// (to args.agent_name), which baton does not count as tool calls.
const adkTransfer = "transfer_to_agent"

// adkText returns the text parts of a genai Content, thoughts excepted.
func adkText(content adkObject, p string, ps *problems) string {
	var parts []adkObject
	content.list(ps, p, "parts", &parts, false)
	var texts []string
	for i, part := range parts {
		var thought bool
		_ = json.Unmarshal(part["thought"], &thought)
		var text string
		if part.str(ps, at(p+".parts", i), "text", &text, false) && !thought {
			texts = append(texts, text)
		}
	}
	return strings.Join(texts, "\n")
}

// adkIntermediate returns the tool uses of IntermediateData or
// InvocationEvents as expected calls, and their responses as recorded
// tool calls (arguments taken from the use of the same id, else of the
// same name in order).
func adkIntermediate(o adkObject, p string, ps *problems) ([]ToolCallExpect, []ToolCall) {
	var uses, responses []adkObject
	if _, ok := o.raw("invocation_events"); ok {
		var events []adkObject
		o.list(ps, p, "invocation_events", &events, true)
		for i, ev := range events {
			ep := at(p+".invocation_events", i)
			var content adkObject
			if !ev.field(ps, ep, "content", &content, false) {
				continue
			}
			var parts []adkObject
			content.list(ps, ep+".content", "parts", &parts, false)
			for _, part := range parts {
				var fc, fr adkObject
				if part.field(ps, ep+".content.parts", "function_call", &fc, false) {
					uses = append(uses, fc)
				}
				if part.field(ps, ep+".content.parts", "function_response", &fr, false) {
					responses = append(responses, fr)
				}
			}
		}
	} else {
		o.list(ps, p, "tool_uses", &uses, false)
		o.list(ps, p, "tool_responses", &responses, false)
	}
	calls := []ToolCallExpect{}
	type use struct {
		id, name string
		args     json.RawMessage
	}
	var used []use
	for i, u := range uses {
		up := at(p+".tool_uses", i)
		var c ToolCallExpect
		var id string
		u.str(ps, up, "name", &c.Name, true)
		u.str(ps, up, "id", &id, false)
		u.field(ps, up, "args", &c.Args, false)
		args, _ := u.raw("args")
		calls = append(calls, c)
		used = append(used, use{id: id, name: c.Name, args: args})
	}
	var results []ToolCall
	for i, r := range responses {
		rp := at(p+".tool_responses", i)
		var tc ToolCall
		r.str(ps, rp, "name", &tc.Name, true)
		r.str(ps, rp, "id", &tc.ID, false)
		resp, _ := r.raw("response")
		tc.Output = adkOutput(resp)
		for j, u := range used {
			if (tc.ID != "" && u.id == tc.ID) || (tc.ID == "" && u.name == tc.Name) {
				tc.Arguments = u.args
				used = append(used[:j], used[j+1:]...)
				break
			}
		}
		results = append(results, tc)
	}
	return calls, results
}

// adkOutput is a FunctionResponse's response as a tool's result: the text
// of {"result": "text"} (how ADK wraps a tool's plain return value), else
// the JSON.
func adkOutput(resp json.RawMessage) string {
	var wrapped struct {
		Result *string `json:"result"`
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(resp, &fields) == nil && len(fields) == 1 && json.Unmarshal(resp, &wrapped) == nil && wrapped.Result != nil {
		return *wrapped.Result
	}
	return string(resp)
}

func adkRubrics(rs []adkObject, p string, ps *problems) []Rubric {
	var out []Rubric
	for i, r := range rs {
		rp := at(p, i)
		var rb Rubric
		var content adkObject
		r.str(ps, rp, "rubric_id", &rb.ID, false)
		if r.field(ps, rp, "rubric_content", &content, true) {
			content.str(ps, rp+".rubric_content", "text_property", &rb.Text, true)
		}
		out = append(out, rb)
	}
	return out
}

// withThreshold sets the threshold of rubrics that have none to th (0
// leaves them at the default).
func withThreshold(rubrics []Rubric, th float64) []Rubric {
	for i := range rubrics {
		if rubrics[i].Threshold == 0 {
			rubrics[i].Threshold = th
		}
	}
	return rubrics
}
