package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store/internal/sqlcore"
)

// FuzzCheckJSON holds sqlcore.CheckJSON, which both backends apply to the
// JSON they write to jsonb columns, to PostgreSQL's own verdict: a valid
// JSON value is refused by CheckJSON exactly when PostgreSQL's jsonb
// refuses it, and PostgreSQL refuses only with a data exception (SQLSTATE
// class 22, which pgstore maps to store.ErrInvalid).
func FuzzCheckJSON(f *testing.F) {
	u := testdb.URL(f)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close(ctx) })
	for _, s := range []string{
		`"a\u0000b"`, `{"\u0000":1}`, `"\ud800"`, `"\ud800x"`, `["\udc00"]`, `"\ud800\ud800"`, `"\ud83d\ude00"`,
		`"\uD83D\uDE00"`, `"a\"\\u0000"`, "\"caf\xe9\"", `"\u00e9\u20ac"`,
		`1e131072`, `1e131071`, `-9.99e131071`, `0.1e131073`, `12345e131067`, `12345e131068`,
		`1e-16383`, `1e-16384`, `1.5e-16383`, `100e-16385`, `100e-16383`, `0.0e-16382`, `0.0e-16383`,
		`0e131072`, `0e1073741822`, `0e1073741823`, `0e-1073741822`, `1E+5`, `-0`, `0.000001e131077`,
		`[1e1000000000000]`, `1` + strings.Repeat("0", 131071), `1` + strings.Repeat("0", 131072),
		`0.` + strings.Repeat("0", 16382) + `1`, `0.` + strings.Repeat("0", 16383) + `1`,
		`{"a":[{"b":null,"c":true,"d":[1,2.5,-3e2]}]}`, `[]`, `{}`, `""`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		ours := sqlcore.CheckJSON("v", b)
		var out string
		theirs := conn.QueryRow(ctx, `SELECT $1::text::jsonb::text`, string(b)).Scan(&out)
		var pe *pgconn.PgError
		if theirs != nil && (!errors.As(theirs, &pe) || !strings.HasPrefix(pe.Code, "22")) {
			t.Fatalf("%.200q: PostgreSQL refused it with %v, not a data exception", b, theirs)
		}
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("%.200q: CheckJSON says %v, PostgreSQL says %v", b, ours, theirs)
		}
	})
}
