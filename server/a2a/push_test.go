package a2a_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestA2APush: push notification configs on protocols 0.3 and 1.0, with
// the Go SDK's client and a2av1's, to a receiver on loopback. The card
// declares push notifications; a config given with message/send
// (SendMessage) gets the completed task; a config set on a task waiting
// for input (set / CreateTaskPushNotificationConfig) is read back by get
// and list and gets the task once the approval completes it, then is
// deleted; each notification is the protocol's task (0.3's Task, 1.0's
// StreamResponse), with the config's token and authentication headers and
// a Standard Webhooks signature the reference library verifies, and is in
// the delivery log; a refused URL, another owner's task and a deleted
// config are errors. SQLite and PostgreSQL.
func TestA2APush(t *testing.T) {
	t.Parallel()
	servertest.EachWithWebhooks(t, func(t *testing.T, b *servertest.Bundle, rcv *webhooktest.Receiver) {
		// Push notifications are signed with the secret of alice and
		// each config's URL, not the server's (the receiver checks both).
		for _, path := range []string{"/send/0.3", "/send/1.0", "/set/0.3", "/set/1.0", "/pages"} {
			b.EndpointSecret(t, b.KeyA, rcv, rcv.URL+path)
		}
		var card struct {
			Capabilities struct{ PushNotifications bool }
		}
		b.Do(t, "", "GET", "/a2a/support/.well-known/agent-card.json", nil).JSON(t, &card)
		if !card.Capabilities.PushNotifications {
			t.Error("the card does not declare push notifications")
		}
		for _, v := range []struct {
			name string
			tr   func(b *servertest.Bundle, network, key string) a2aclient.Transport
		}{{"0.3", a2aTransport}, {"1.0", a2aTransport1}} {
			t.Run(v.name, func(t *testing.T) { testA2APush(t, b, rcv, v.name, v.tr) })
		}
	})
}

func testA2APush(t *testing.T, b *servertest.Bundle, rcv *webhooktest.Receiver, proto string, tr func(b *servertest.Bundle, network, key string) a2aclient.Transport) {
	ctx := t.Context()
	support := tr(b, "support", b.KeyA)
	auth := &a2a.PushAuthInfo{Schemes: []string{"Bearer"}, Credentials: "cred-" + proto}

	// A config with the message.
	send := &a2a.PushConfig{ID: "on-send", URL: rcv.URL + "/send/" + proto, Token: "tok-send", Auth: auth}
	res, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("I was charged twice for order 1234"), Config: &a2a.MessageSendConfig{PushConfig: send}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	working := map[string][]webhooktest.Delivery{}
	got := receive(t, rcv, "/send/"+proto, working, true)
	checkPush(t, got, proto, "tok-send", "Bearer cred-"+proto, task.ID, a2a.TaskStateCompleted)
	// The task's start: working, once.
	if w := working["/send/"+proto]; len(w) != 1 {
		t.Fatalf("%d working notifications of the task's start, want 1", len(w))
	} else {
		checkPush(t, w[0], proto, "tok-send", "Bearer cred-"+proto, task.ID, a2a.TaskStateWorking)
		if w[0].ID == got.ID {
			t.Errorf("working and completed share webhook-id %s", got.ID)
		}
	}

	// A config set on a task waiting for input.
	waiting := collectA2A(t, support.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userA2A("I want a refund for order 1234")}))
	task = waiting.events[0].(*a2a.Task)
	set, err := support.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{ID: "later", URL: rcv.URL + "/set/" + proto, Token: "tok-set"}})
	if err != nil || set.TaskID != task.ID || set.Config.ID != "later" || set.Config.Token != "tok-set" {
		t.Fatalf("set: %v %+v", err, set)
	}
	if c, err := support.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "later"}); err != nil || c.Config.URL != rcv.URL+"/set/"+proto {
		t.Fatalf("get: %v %+v", err, c)
	}
	if cs, err := support.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task.ID}); err != nil || len(cs) != 1 || cs[0].Config.ID != "later" {
		t.Fatalf("list: %v %+v", err, cs)
	}
	approve := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.DataPart{Data: map[string]any{"type": "approve"}})
	if _, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: approve}); err != nil {
		t.Fatal(err)
	}
	got = receive(t, rcv, "/set/"+proto, working, false)
	checkPush(t, got, proto, "tok-set", "", task.ID, a2a.TaskStateCompleted)
	if !strings.Contains(string(got.Body), "Your refund R-77") {
		t.Errorf("the notification lacks the answer: %s", got.Body)
	}
	var log struct{ Data []deliveryRow }
	// The worker logs the attempt once the receiver answered it (the
	// resumption's working notification, if the run was still running at
	// its first checkpoint, is left out).
	for deadline := time.Now().Add(30 * time.Second); len(log.Data) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b.Do(t, b.KeyA, "GET", "/v1/webhooks/deliveries?run_id="+string(task.ID), nil).JSON(t, &log)
		log.Data = slices.DeleteFunc(log.Data, func(d deliveryRow) bool { return d.Type == webhook.RunWorking })
	}
	if len(log.Data) != 1 || log.Data[0].URL != rcv.URL+"/set/"+proto || log.Data[0].StatusCode != 204 || log.Data[0].Network != "support" ||
		log.Data[0].Target != "later" {
		t.Errorf("delivery log of the task: %+v", log.Data)
	}

	// Deleted, the config is gone.
	if err := support.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigParams{TaskID: task.ID, ConfigID: "later"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := support.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "later"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("get after delete: %v, want invalid params", err)
	}
	if cs, err := support.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task.ID}); err != nil || len(cs) != 0 {
		t.Errorf("list after delete: %v %+v", err, cs)
	}

	// Refusals.
	for _, bad := range []string{"http://10.0.0.1/x", "http://169.254.169.254/", "ftp://127.0.0.1/x"} {
		if _, err := support.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{URL: bad}}); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("set %s: %v, want invalid params", bad, err)
		}
	}
	if _, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("Hi there"), Config: &a2a.MessageSendConfig{PushConfig: &a2a.PushConfig{URL: "http://10.0.0.1/x"}}}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("send with a refused URL: %v, want invalid params", err)
	}
	bob := tr(b, "support", b.KeyB)
	if _, err := bob.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{URL: rcv.URL + "/bob"}}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("set on another owner's task: %v, want task not found", err)
	}
	if _, err := bob.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("list of another owner's task: %v, want task not found", err)
	}
	if v1, ok := support.(*a2av1.Transport); ok {
		testA2APushPages(t, v1, support, task.ID, rcv.URL)
	}
}

// testA2APushPages: 1.0's ListTaskPushNotificationConfigs in pages of
// pageSize, each with the token of the next ("" after the last), a config
// deleted between pages shifting none of the others; a2av1's client
// follows the pages; a malformed token or a negative pageSize is
// InvalidParams.
func testA2APushPages(t *testing.T, v1 *a2av1.Transport, tr a2aclient.Transport, task a2a.TaskID, url string) {
	ctx := t.Context()
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("page-%d", i)
		if _, err := tr.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task, Config: a2a.PushConfig{ID: id, URL: url + "/pages"}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	page := func(token string) a2av1.PushConfigList {
		t.Helper()
		var out a2av1.PushConfigList
		if err := v1.ListTaskPushConfigPage(ctx, a2av1.PushConfigParams{TaskID: string(task), PageSize: 2, PageToken: token}, &out); err != nil {
			t.Fatalf("page after %q: %v", token, err)
		}
		return out
	}
	ids := func(l a2av1.PushConfigList) (out []string) {
		for _, c := range l.Configs {
			out = append(out, c.ID)
		}
		return out
	}
	first := page("")
	if got := ids(first); !slices.Equal(got, want[:2]) || first.NextPageToken == "" {
		t.Fatalf("first page %v, next %q; want %v and a token", got, first.NextPageToken, want[:2])
	}
	// The first page's last config deleted: the next page starts after it all the same.
	if err := tr.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigParams{TaskID: task, ConfigID: want[1]}); err != nil {
		t.Fatal(err)
	}
	second := page(first.NextPageToken)
	if got := ids(second); !slices.Equal(got, want[2:4]) || second.NextPageToken == "" {
		t.Fatalf("second page %v, next %q; want %v and a token", got, second.NextPageToken, want[2:4])
	}
	last := page(second.NextPageToken)
	if got := ids(last); !slices.Equal(got, want[4:]) || last.NextPageToken != "" {
		t.Fatalf("last page %v, next %q; want %v and none", got, last.NextPageToken, want[4:])
	}
	all, err := tr.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: task})
	if err != nil || len(all) != 4 {
		t.Fatalf("the client's list: %v, %d configs, want 4", err, len(all))
	}
	for _, bad := range []a2av1.PushConfigParams{{PageToken: "not a token!"}, {PageToken: "eC8"}, {PageToken: strings.Repeat("A", 4000)}, {PageSize: -1}} {
		bad.TaskID = string(task)
		var out a2av1.PushConfigList
		if err := v1.ListTaskPushConfigPage(ctx, bad, &out); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("list with %+v: %v, want invalid params", bad, err)
		}
	}
	for _, id := range want {
		_ = tr.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigParams{TaskID: task, ConfigID: id})
	}
}

// deliveryRow is a row of GET /v1/webhooks/deliveries.
type deliveryRow struct {
	Type       string `json:"type"`
	URL        string `json:"url"`
	Target     string `json:"target"`
	StatusCode int    `json:"status_code"`
	RunID      string `json:"run_id"`
	Network    string `json:"network"`
}

// receive returns the next delivery of a task that is not working, which
// must go to path. Working ones (a task's start or resumption, to any
// path, in any order with the others) go to working[their path]; with
// wantWorking, receive also waits for one to path.
func receive(t *testing.T, rcv *webhooktest.Receiver, path string, working map[string][]webhooktest.Delivery, wantWorking bool) webhooktest.Delivery {
	t.Helper()
	var final *webhooktest.Delivery
	timeout := time.After(60 * time.Second)
	for final == nil || wantWorking && len(working[path]) == 0 {
		select {
		case d := <-rcv.Got:
			if bad := rcv.Bad(); len(bad) > 0 {
				t.Fatalf("deliveries that did not verify: %v", bad)
			}
			if isWorking(d.Body) {
				working[d.Path] = append(working[d.Path], d)
				continue
			}
			if d.Path != path || final != nil {
				t.Fatalf("a delivery to %s, want %s: %s", d.Path, path, d.Body)
			}
			final = &d
		case <-timeout:
			t.Fatalf("no delivery to %s in 60 s (working ones: %d)", path, len(working[path]))
		}
	}
	return *final
}

// isWorking reports whether a notification's task (0.3's Task, 1.0's
// StreamResponse) is working.
func isWorking(body []byte) bool {
	var n struct {
		Status struct{ State string }
		Task   struct{ Status struct{ State string } }
	}
	return json.Unmarshal(body, &n) == nil && (n.Status.State == "working" || n.Task.Status.State == "TASK_STATE_WORKING")
}

// checkPush checks a notification: the protocol's task of id in state,
// the token and authorization headers.
func checkPush(t *testing.T, d webhooktest.Delivery, proto, token, authz string, id a2a.TaskID, state a2a.TaskState) {
	t.Helper()
	if h := d.Header.Get("X-A2A-Notification-Token"); h != token {
		t.Errorf("X-A2A-Notification-Token %q, want %q", h, token)
	}
	if h := d.Header.Get("Authorization"); h != authz {
		t.Errorf("Authorization %q, want %q", h, authz)
	}
	if d.Header.Get("webhook-signature") == "" || !strings.HasPrefix(d.ID, "msg_") {
		t.Errorf("no Standard Webhooks headers: %v", d.Header)
	}
	var task *a2a.Task
	switch proto {
	case "0.3":
		if ct := d.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(d.Body, &task); err != nil {
			t.Fatalf("0.3 notification: %v: %s", err, d.Body)
		}
	default:
		if ct := d.Header.Get("Content-Type"); ct != "application/a2a+json" {
			t.Errorf("Content-Type %q", ct)
		}
		var sr a2av1.StreamResponse
		if err := json.Unmarshal(d.Body, &sr); err != nil || sr.Task == nil {
			t.Fatalf("1.0 notification: %v: %s", err, d.Body)
		}
		var err error
		if task, err = a2av1.FromTask(sr.Task); err != nil {
			t.Fatal(err)
		}
	}
	if task.ID != id || task.Status.State != state || (answerOf(task) == "") != (state == a2a.TaskStateWorking) {
		t.Errorf("notified task %s %s (answer %q), want %s %s: %s", task.ID, task.Status.State, answerOf(task), id, state, d.Body)
	}
}

// TestA2APushOff: a server without webhooks declares no push
// notifications, and the config methods and a config with a message
// answer PushNotificationNotSupported, on both protocols.
func TestA2APushOff(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	var card struct {
		Capabilities struct{ PushNotifications bool }
	}
	b.Do(t, "", "GET", "/a2a/support/.well-known/agent-card.json", nil).JSON(t, &card)
	if card.Capabilities.PushNotifications {
		t.Error("the card declares push notifications without webhooks")
	}
	for name, tr := range map[string]func(b *servertest.Bundle, network, key string) a2aclient.Transport{"0.3": a2aTransport, "1.0": a2aTransport1} {
		ctx := t.Context()
		support := tr(b, "support", b.KeyA)
		res, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("Hi there")})
		if err != nil {
			t.Fatal(err)
		}
		id := res.(*a2a.Task).ID
		if _, err := support.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: id, Config: a2a.PushConfig{URL: "https://example.com/hook"}}); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
			t.Errorf("%s set: %v, want not supported", name, err)
		}
		if _, err := support.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: id}); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
			t.Errorf("%s list: %v, want not supported", name, err)
		}
		_, err = support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("Hi there"), Config: &a2a.MessageSendConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/hook"}}})
		if !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
			t.Errorf("%s send with a config: %v, want not supported", name, err)
		}
	}
}
