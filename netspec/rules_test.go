package netspec_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

func TestScriptRules(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: chat
agents:
  - name: a
    model: scripted
    script:
      - text: first
    rules:
      - when: "(?i)status"
        tool_calls: [{name: status}]
        then:
          - text: all good
      - when: "(?i)thank"
        text: You're welcome.
    reply: Anything else?
    tools: [status]
tools:
  - name: status
    result: ok
`
	spec, err := netspec.Parse([]byte(src), "chat.yaml", netspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := spec.Network.Agent("a")
	var hist []message.Message
	var got []string
	for _, u := range []string{"hi", "status?", "thanks", "what?"} {
		hist = append(hist, message.User(u))
		for range 3 {
			r, err := model.Collect(a.Model.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist}))
			if err != nil {
				t.Fatalf("%q: %v", u, err)
			}
			hist = append(hist, r.Message)
			if !r.Message.HasToolCalls() {
				got = append(got, r.Message.Text())
				break
			}
			c := r.Message.ToolCalls()[0]
			got = append(got, "call "+c.Name)
			hist = append(hist, message.ToolResult("a", c.ID, c.Name, "ok", false))
		}
	}
	if want := "first|call status|all good|You're welcome.|Anything else?"; strings.Join(got, "|") != want {
		t.Errorf("answers %q, want %q", strings.Join(got, "|"), want)
	}

	// A file with rules or a reply, and no script, is valid; the fields of
	// a file without them hash as before (TestFingerprintsKept).
	if _, err := netspec.Parse([]byte("version: 1\nname: r\nagents:\n  - name: a\n    model: scripted\n    reply: Hello.\n"), "r.yaml", netspec.Options{}); err != nil {
		t.Errorf("reply only: %v", err)
	}
}

func TestScriptRulesProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, agent, want string }{
		{"EmptyRule", "    rules:\n      - when: x\n", "a script step needs"},
		{"ThenWhen", "    rules:\n      - text: a\n        then:\n          - when: x\n            text: b\n", "only the rule has a when:"},
		{"BadRegexp", "    rules:\n      - when: \"(\"\n        text: a\n", "r.yaml:7: invalid regular expression"},
		{"UnknownField", "    rules:\n      - text: a\n        thne: []\n", `unknown field "thne"`},
		{"Nothing", "", "needs a script: of steps, rules: or a reply:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "version: 1\nname: r\nagents:\n  - name: a\n    model: scripted\n" + tt.agent
			_, err := netspec.Parse([]byte(src), "r.yaml", netspec.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	src := "version: 1\nname: r\nagents:\n  - name: a\n    model: openai-compatible:m\n    base_url: http://127.0.0.1:1/v1\n    reply: hi\n"
	if _, err := netspec.Parse([]byte(src), "r.yaml", netspec.Options{}); err == nil || !strings.Contains(err.Error(), "only for model: scripted") {
		t.Errorf("reply on a provider model: %v", err)
	}
}
