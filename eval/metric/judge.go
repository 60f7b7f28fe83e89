package metric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Judge scores a rubric: how well a turn has a property, from 0 (not at
// all) to 1 (fully). It must be safe for concurrent use.
type Judge interface {
	Judge(ctx context.Context, in *JudgeInput) (*Verdict, error)
}

// JudgeInput is what a judge sees of a turn.
type JudgeInput struct {
	// Rubric is the property to judge.
	Rubric string
	// User is the user's message, Answer the final answer.
	User, Answer string
	// Trajectory summarises what the network did: first agent, transfers,
	// tool calls, status.
	Trajectory string
}

// Verdict is a judge's score and reason.
type Verdict struct {
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// Judges returns the judge of a name: a rubric's judge, or "" for the
// run's default. It must be safe for concurrent use.
type Judges func(name string) (Judge, error)

func rubric(ctx context.Context, turn, i int, user string, r *evalset.Rubric, o *evalset.Outcome, judges Judges) Check {
	name := r.ID
	if name == "" {
		name = fmt.Sprintf("rubric%d", i+1)
	}
	th := r.Threshold
	if th == 0 {
		th = evalset.DefaultRubricThreshold
	}
	fail := func(err error) Check {
		c := check(Rubric, turn, 0, th, "judge: "+err.Error())
		c.Name = name
		return c
	}
	if judges == nil {
		return fail(errors.New("no judge model: give the rubric a judge: or the run a default judge (--judge)"))
	}
	j, err := judges(r.Judge)
	if err != nil {
		return fail(err)
	}
	v, err := j.Judge(ctx, &JudgeInput{Rubric: r.Text, User: user, Answer: o.Answer, Trajectory: trajectory(o)})
	if err != nil {
		return fail(err)
	}
	c := check(Rubric, turn, v.Score, th, v.Reason)
	c.Name = name
	return c
}

func trajectory(o *evalset.Outcome) string {
	return fmt.Sprintf("first agent: %s\ntransfers: %s\ntool calls: %s\nstatus: %s", orNone(o.FirstAgent), FormatTransfers(o.Transfers), FormatTools(o.Tools), orNone(o.Status))
}

// ModelJudge returns a judge that asks m, with structured output, for a
// verdict {"score": 0..1, "reason": "…"}.
func ModelJudge(m model.Model) Judge { return modelJudge{m} }

type modelJudge struct{ m model.Model }

const judgeSystem = `You evaluate one turn of a conversation between a user and an assistant (a network of agents).
Judge how well the turn has the property you are given, from 0 (not at all) to 1 (fully).
Answer with a JSON object only: {"score": <number from 0 to 1>, "reason": "<one sentence>"}.`

var verdictSchema = json.RawMessage(`{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1},"reason":{"type":"string"}},"required":["score","reason"],"additionalProperties":false}`)

// Judge implements Judge.
func (j modelJudge) Judge(ctx context.Context, in *JudgeInput) (*Verdict, error) {
	prompt := fmt.Sprintf("Property: %s\n\nUser message:\n%s\n\nWhat the assistant did:\n%s\n\nFinal answer:\n%s", in.Rubric, in.User, in.Trajectory, in.Answer)
	resp, err := model.Collect(j.m.Stream(ctx, &model.Request{Agent: "judge", System: judgeSystem,
		Messages: []message.Message{message.User(prompt)},
		Output:   &model.OutputSchema{Name: "verdict", Schema: verdictSchema, Strict: true}}))
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(resp.Message.Text())
	if m := fence.FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	var v Verdict
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("the judge's answer is not a verdict {\"score\", \"reason\"}: %s", quote(resp.Message.Text()))
	}
	if math.IsNaN(v.Score) || v.Score < 0 || v.Score > 1 {
		return nil, fmt.Errorf("the judge's score %v is not from 0 to 1", v.Score)
	}
	return &v, nil
}
