package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

func testOwners(t *testing.T, s store.Store, b *bundle) {
	o := Must(s.GetOwner(b.ctx, &store.GetOwnerParams{ID: b.owner}))(t)
	if o.ID != b.owner || o.Name != "name of "+b.owner {
		t.Fatalf("GetOwner = %+v", o)
	}
	checkTime(t, "CreatedAt", o.CreatedAt)
	again := Must(s.EnsureOwner(b.ctx, &store.EnsureOwnerParams{ID: b.owner, Name: "renamed"}))(t)
	if *again != *o {
		t.Fatalf("EnsureOwner of an existing owner = %+v, want it unchanged %+v", again, o)
	}
	_, err := s.GetOwner(b.ctx, &store.GetOwnerParams{ID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
}

func testAPIKeys(t *testing.T, s store.Store, b *bundle) {
	created := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Name: "ci"}))(t)
	k := created.Key
	if created.Secret == "" || k.Hash != store.HashAPIKey(created.Secret) || k.Prefix != store.APIKeyPrefix(created.Secret) {
		t.Fatalf("CreateAPIKey = %+v, secret %q", k, created.Secret)
	}
	if k.OwnerID != b.owner || k.Name != "ci" || !k.RevokedAt.IsZero() {
		t.Fatalf("CreateAPIKey = %+v", k)
	}
	checkTime(t, "CreatedAt", k.CreatedAt)
	if len(k.Hash) != 64 || k.Hash == created.Secret {
		t.Fatalf("Hash %q is not a hex SHA-256", k.Hash)
	}

	got := Must(s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: store.HashAPIKey(created.Secret)}))(t)
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("LookupAPIKey = %+v, want %+v", got, k)
	}
	_, err := s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: store.HashAPIKey("wrong")})
	wantErr(t, err, store.ErrNotFound)

	fixed := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Name: "fixed", Secret: "baton_fixed-" + uuid.NewString()}))(t)
	if fixed.Key.Hash != store.HashAPIKey(fixed.Secret) {
		t.Fatalf("given secret not used")
	}
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Secret: fixed.Secret})
	wantErr(t, err, store.ErrConflict)

	revoked := Must(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.owner, ID: k.ID}))(t)
	checkTime(t, "RevokedAt", revoked.RevokedAt)
	_, err = s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: k.Hash})
	wantErr(t, err, store.ErrNotFound)
	again := Must(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.owner, ID: k.ID}))(t)
	if !again.RevokedAt.Equal(revoked.RevokedAt) {
		t.Fatalf("revoking twice moved RevokedAt: %v then %v", revoked.RevokedAt, again.RevokedAt)
	}

	keys := Must(s.ListAPIKeys(b.ctx, &store.ListAPIKeysParams{OwnerID: b.owner}))(t)
	if len(keys) != 2 || keys[0].ID != k.ID || keys[1].ID != fixed.Key.ID || keys[0].RevokedAt.IsZero() {
		t.Fatalf("ListAPIKeys = %+v", keys)
	}
	if keys := Must(s.ListAPIKeys(b.ctx, &store.ListAPIKeysParams{OwnerID: b.other}))(t); len(keys) != 0 {
		t.Fatalf("other owner lists %d keys", len(keys))
	}
	_, err = s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.other, ID: fixed.Key.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadCreateGet(t *testing.T, s store.Store, b *bundle) {
	md := map[string]json.RawMessage{"app": json.RawMessage(`{"a":1}`)}
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{
		OwnerID: b.owner, Name: "Trip ✈️ planning", Network: "travel", ActiveAgent: "triage", Metadata: md,
	}))(t)
	if th.ID == "" || th.OwnerID != b.owner || th.Name != "Trip ✈️ planning" || th.Network != "travel" ||
		th.ActiveAgent != "triage" || th.ParentID != "" || th.Version != 1 {
		t.Fatalf("CreateThread = %+v", th)
	}
	if _, err := uuid.Parse(th.ID); err != nil {
		t.Fatalf("ID %q is not a UUID: %v", th.ID, err)
	}
	checkTime(t, "CreatedAt", th.CreatedAt)
	if !th.UpdatedAt.Equal(th.CreatedAt) {
		t.Fatalf("UpdatedAt %v != CreatedAt %v", th.UpdatedAt, th.CreatedAt)
	}
	if len(th.Metadata) != 1 || !jsonEqual(th.Metadata["app"], md["app"]) {
		t.Fatalf("Metadata = %s", th.Metadata)
	}
	got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !reflect.DeepEqual(normThread(got), normThread(th)) {
		t.Fatalf("GetThread = %+v, want %+v", got, th)
	}

	id := "thread-" + uuid.NewString()
	th2 := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: id}))(t)
	if th2.ID != id || th2.Metadata == nil {
		t.Fatalf("CreateThread with ID = %+v", th2)
	}
	_, err := s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: id})
	wantErr(t, err, store.ErrConflict)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Metadata: map[string]json.RawMessage{"x": json.RawMessage(`{`)}})
	wantErr(t, err, store.ErrInvalid)
}

// normThread re-encodes metadata values so that backends that normalise
// JSON compare equal.
func normThread(th *store.Thread) store.Thread {
	c := *th
	c.Metadata = map[string]json.RawMessage{}
	for k, v := range th.Metadata {
		var x any
		_ = json.Unmarshal(v, &x)
		c.Metadata[k], _ = json.Marshal(x)
	}
	return c
}

// testThreadWithMessages: a thread created with its first messages holds
// them from seq 1, and appends continue after them.
func testThreadWithMessages(t *testing.T, s store.Store, b *bundle) {
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Network: "net", ActiveAgent: "triage",
		Messages: sampleMessages()[:2]}))(t)
	if th.ActiveAgent != "triage" {
		t.Errorf("active agent %q", th.ActiveAgent)
	}
	Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: sampleMessages()[2:3]}))(t)
	msgs := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	want := sampleMessages()[:3]
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Text() != want[i].Message.Text() || m.Role != want[i].Message.Role {
			t.Errorf("message %d: seq %d %s %q, want seq %d %s %q", i, m.Seq, m.Role, m.Text(), i+1, want[i].Message.Role, want[i].Message.Text())
		}
	}
	// Invalid first messages create nothing.
	bad := &store.CreateThreadParams{OwnerID: b.owner, ID: "bad-" + uuid.NewString(), Messages: []store.NewMessage{{Message: message.Message{Role: "robot"}}}}
	_, err := s.CreateThread(b.ctx, bad)
	wantErr(t, err, store.ErrInvalid)
	_, err = s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: bad.ID})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadParent(t *testing.T, s store.Store, b *bundle) {
	parent := newThread(t, s, b)
	child := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ParentID: parent.ID}))(t)
	if child.ParentID != parent.ID {
		t.Fatalf("ParentID = %q, want %q", child.ParentID, parent.ID)
	}
	_, err := s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ParentID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	// A parent of another owner is missing too.
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other, ParentID: parent.ID})
	wantErr(t, err, store.ErrNotFound)
	page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, ParentID: parent.ID}))(t)
	if len(page.Threads) != 1 || page.Threads[0].ID != child.ID || page.NextCursor != "" {
		t.Fatalf("children = %+v", page)
	}
}

func testThreadList(t *testing.T, s store.Store, b *bundle) {
	const n = 7
	var ids []string
	for range n {
		ids = append(ids, newThread(t, s, b).ID)
	}
	newThread(t, s, &bundle{ctx: b.ctx, owner: b.other})
	var got []string
	cursor := ""
	pages := 0
	for {
		page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, Limit: 3, Cursor: cursor}))(t)
		pages++
		for _, th := range page.Threads {
			got = append(got, th.ID)
		}
		if page.NextCursor == "" {
			break
		}
		if pages > n {
			t.Fatal("paging does not end")
		}
		cursor = page.NextCursor
	}
	// Newest first.
	want := make([]string, n)
	for i := range ids {
		want[n-1-i] = ids[i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3", pages)
	}
	all := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner}))(t)
	if len(all.Threads) != n || all.NextCursor != "" {
		t.Fatalf("default page has %d threads, cursor %q", len(all.Threads), all.NextCursor)
	}
	_, err := s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, Cursor: "%%%"})
	wantErr(t, err, store.ErrInvalid)
	empty := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: "nobody-" + uuid.NewString()}))(t)
	if len(empty.Threads) != 0 {
		t.Fatalf("unknown owner lists %d threads", len(empty.Threads))
	}
}

func testThreadMetadataMerge(t *testing.T, s store.Store, b *bundle) {
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner,
		Metadata: map[string]json.RawMessage{"app": json.RawMessage(`{"keep":true}`)}}))(t)
	update := func(ns, patch string) *store.Thread {
		t.Helper()
		return Must(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{
			OwnerID: b.owner, ThreadID: th.ID, Namespace: ns, Patch: json.RawMessage(patch)}))(t)
	}
	got := update(store.MetadataThreadHandoff, `{"handoff_id":"h1","seed":{"active":true,"n":1}}`)
	if got.Version != 2 || !got.UpdatedAt.After(th.UpdatedAt) && !got.UpdatedAt.Equal(th.UpdatedAt) {
		t.Fatalf("after update: version %d, updated %v", got.Version, got.UpdatedAt)
	}
	got = update(store.MetadataThreadHandoff, `{"seed":{"active":null,"cleared":true},"parent":"p"}`)
	want := `{"handoff_id":"h1","parent":"p","seed":{"n":1,"cleared":true}}`
	if !jsonEqual(got.Metadata[store.MetadataThreadHandoff], []byte(want)) {
		t.Fatalf("handoff = %s, want %s", got.Metadata[store.MetadataThreadHandoff], want)
	}
	if !jsonEqual(got.Metadata["app"], []byte(`{"keep":true}`)) {
		t.Fatalf("other namespace changed: %s", got.Metadata["app"])
	}
	if got.Version != 3 {
		t.Fatalf("version %d, want 3", got.Version)
	}
	// Big numbers survive the merge exactly.
	got = update("nums", `{"big":12345678901234567890}`)
	if !jsonEqual(got.Metadata["nums"], []byte(`{"big":12345678901234567890}`)) || !strings.Contains(string(got.Metadata["nums"]), "12345678901234567890") {
		t.Fatalf("nums = %s", got.Metadata["nums"])
	}
	got = update(store.MetadataThreadHandoff, `null`)
	if _, ok := got.Metadata[store.MetadataThreadHandoff]; ok {
		t.Fatalf("namespace not removed: %s", got.Metadata)
	}
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !reflect.DeepEqual(normThread(read), normThread(got)) {
		t.Fatalf("GetThread = %+v, want %+v", read, got)
	}
	_, err := s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`{"a":`)})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Patch: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.other, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadMetadataCAS(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	p := &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "ns", Patch: json.RawMessage(`{"v":1}`), ExpectedVersion: th.Version}
	up := Must(s.UpdateThreadMetadata(b.ctx, p))(t)
	if up.Version != th.Version+1 {
		t.Fatalf("version %d", up.Version)
	}
	// The same expected version again is stale.
	p.Patch = json.RawMessage(`{"v":2}`)
	_, err := s.UpdateThreadMetadata(b.ctx, p)
	vc := wantAs[*store.VersionConflictError](t, err)
	wantErr(t, err, store.ErrConflict)
	if vc.Expected != th.Version || vc.Actual != up.Version || vc.ID != th.ID {
		t.Fatalf("conflict = %+v", vc)
	}
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !jsonEqual(read.Metadata["ns"], []byte(`{"v":1}`)) || read.Version != up.Version {
		t.Fatalf("a failed CAS wrote: %s version %d", read.Metadata["ns"], read.Version)
	}
}

func testThreadMetadataConcurrentCAS(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	// Of concurrent compare-and-swaps exactly one wins.
	oneWinner(t, race(8, func(i int) error {
		return errOf(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{
			OwnerID: b.owner, ThreadID: th.ID, Namespace: store.MetadataThreadHandoff,
			Patch: json.RawMessage(fmt.Sprintf(`{"cleared_by":%d}`, i)), ExpectedVersion: th.Version,
		}))
	}))
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if read.Version != th.Version+1 {
		t.Fatalf("version %d, want %d", read.Version, th.Version+1)
	}
}

func testThreadActiveAgent(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	up := Must(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "billing", ExpectedVersion: 1}))(t)
	if up.ActiveAgent != "billing" || up.Version != 2 {
		t.Fatalf("SetActiveAgent = %+v", up)
	}
	_, err := s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "x", ExpectedVersion: 1})
	wantAs[*store.VersionConflictError](t, err)
	up = Must(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "triage"}))(t)
	if up.ActiveAgent != "triage" || up.Version != 3 {
		t.Fatalf("SetActiveAgent without CAS = %+v", up)
	}
	_, err = s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.other, ThreadID: th.ID, Agent: "x"})
	wantErr(t, err, store.ErrNotFound)
}
