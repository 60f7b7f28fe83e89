package pgstore

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton/store/internal/sqlcore"
)

// TestSelectList: statements that are SELECT lists are joined into one,
// parameters renumbered as the regular expression \$[0-9]+ finds them;
// others are left alone.
func TestSelectList(t *testing.T) {
	t.Parallel()
	got := selectList([]queued{
		{sql: "SELECT set_config('baton.owner', $1, true)", args: []any{"o"}},
		{sql: "SELECT pg_advisory_xact_lock($1, hashtext($2))", args: []any{1, "k"}},
		{sql: "SELECT pg_notify($1, $2)", args: []any{"c", "p"}},
		{sql: "UPDATE t SET a = $1", args: []any{"x"}},
		{sql: "SELECT $1", args: []any{"y"}},
	})
	want := []queued{
		{sql: "SELECT set_config('baton.owner', $1, true), pg_advisory_xact_lock($2, hashtext($3)), pg_notify($4, $5)", args: []any{"o", 1, "k", "c", "p"}},
		{sql: "UPDATE t SET a = $1", args: []any{"x"}},
		{sql: "SELECT $1", args: []any{"y"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statements, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].sql != want[i].sql || len(got[i].args) != len(want[i].args) {
			t.Fatalf("statement %d: got %q %v, want %q %v", i, got[i].sql, got[i].args, want[i].sql, want[i].args)
		}
		for j := range want[i].args {
			if got[i].args[j] != want[i].args[j] {
				t.Fatalf("statement %d: got %v, want %v", i, got[i].args, want[i].args)
			}
		}
	}
	param := regexp.MustCompile(`\$[0-9]+`)
	for _, sql := range []string{"", "$", "$$", "$1", "a$", "$a", "$12$3 $", "x $0009 y", "$99999999999999999999999", "é$1é"} {
		for _, k := range []int{0, 1, 7} {
			want := param.ReplaceAllStringFunc(sql, func(p string) string {
				i, _ := strconv.Atoi(p[1:])
				return "$" + strconv.Itoa(i+k)
			})
			if got := renumber(sql, k); got != want {
				t.Errorf("renumber(%q, %d) = %q, want %q", sql, k, got, want)
			}
		}
	}
}

// TestScopeStmt: the scope's statement sets what the scope has, the
// settings that a reset clears included, each once, parameters in order.
func TestScopeStmt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role  string
		sc    sqlcore.Scope
		reset bool
		names []string
		args  []any
	}{
		{"", sqlcore.Scope{Owner: "o"}, false, []string{"baton.owner"}, []any{"o"}},
		{"app", sqlcore.Scope{Owner: "o"}, false, []string{"role", "baton.owner"}, []any{"app", "o"}},
		{"app", sqlcore.Scope{Owner: "o"}, true, []string{"role", "baton.owner", "baton.api_key_hash", "baton.leases"}, []any{"app", "o", "", ""}},
		{"", sqlcore.Scope{Owner: "o", APIKeyHash: "h", Leases: true}, false, []string{"baton.owner", "baton.api_key_hash", "baton.leases"}, []any{"o", "h", "on"}},
		{"", sqlcore.Scope{Owner: "o", Leases: true}, false, []string{"baton.owner", "baton.leases"}, []any{"o", "on"}},
	} {
		st := scopeStmt(tc.role, tc.sc, tc.reset)
		var want []string
		for i, n := range tc.names {
			want = append(want, "set_config('"+n+"', $"+strconv.Itoa(i+1)+", true)")
		}
		if w := "SELECT " + strings.Join(want, ", "); st.sql != w {
			t.Errorf("scopeStmt(%q, %+v, %v) = %q, want %q", tc.role, tc.sc, tc.reset, st.sql, w)
		}
		if len(st.args) != len(tc.args) {
			t.Fatalf("args %v, want %v", st.args, tc.args)
		}
		for i := range tc.args {
			if st.args[i] != tc.args[i] {
				t.Errorf("args %v, want %v", st.args, tc.args)
			}
		}
	}
}
