package a2apush

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// FuzzConfigs reads arbitrary push notification configs of protocol 1.0
// and 0.3 (the params of CreateTaskPushNotificationConfig and of
// tasks/pushNotificationConfig/set): what is stored reads back the same
// through both protocols' shapes, the id defaults to the task's, and the
// notification's body and headers come out for either protocol.
func FuzzConfigs(f *testing.F) {
	for _, seed := range []string{
		`{"taskId":"run_1","id":"a","url":"https://example.com/hook","token":"t","authentication":{"scheme":"Bearer","credentials":"c"}}`,
		`{"taskId":"run_1","url":"http://127.0.0.1:9/x"}`,
		`{"pushNotificationConfig":{"id":"b","url":"https://x","authentication":{"schemes":["Basic","Bearer"],"credentials":"c"}},"taskId":"run_2"}`,
		`{"pushNotificationConfig":{"url":"https://x","authentication":{"schemes":[]}},"taskId":""}`,
		`{}`, `null`, `{"authentication":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v1 a2av1.PushConfig
		if json.Unmarshal(body, &v1) == nil && v1.TaskID != "" {
			c := From10(v1.TaskID, &v1)
			back := To10(&c)
			want := v1
			want.Tenant = ""
			if want.ID == "" {
				want.ID = v1.TaskID
			}
			if a := want.Authentication; a != nil && a.Scheme == "" {
				want.Authentication = nil
			}
			if !equal10(back, want) {
				t.Fatalf("1.0 %s: stored %+v reads back %+v", body, c, back)
			}
			payload(t, &c)
		}
		var v03 a2a.TaskPushConfig
		if json.Unmarshal(body, &v03) == nil && v03.TaskID != "" {
			c := From03(string(v03.TaskID), &v03.Config)
			back := To03(&c)
			if back.TaskID != v03.TaskID || back.Config.URL != v03.Config.URL || back.Config.Token != v03.Config.Token ||
				back.Config.ID == "" || (v03.Config.ID != "" && back.Config.ID != v03.Config.ID) {
				t.Fatalf("0.3 %s: stored %+v reads back %+v", body, c, back)
			}
			if a := v03.Config.Auth; a != nil && len(a.Schemes) > 0 && (back.Config.Auth == nil || back.Config.Auth.Credentials != a.Credentials) {
				t.Fatalf("0.3 %s: authentication lost: %+v", body, back.Config.Auth)
			}
			payload(t, &c)
		}
	})
}

func equal10(a, b a2av1.PushConfig) bool {
	if (a.Authentication == nil) != (b.Authentication == nil) {
		return false
	}
	if a.Authentication != nil && *a.Authentication != *b.Authentication {
		return false
	}
	a.Authentication, b.Authentication = nil, nil
	return a == b
}

// payload checks that a config's notification comes out, as a JSON body.
func payload(t *testing.T, c *store.PushConfig) {
	t.Helper()
	task := Task(&runstate.State{RunID: c.RunID, ThreadID: "t", Status: runstate.StatusCompleted, FinalOutput: "done"})
	body, h, err := Payload(c, task)
	if err != nil || !json.Valid(body) || h["Content-Type"] == "" {
		t.Fatalf("Payload(%+v) = %s, %v, %v", c, body, h, err)
	}
}
