package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/store"
)

// cmdKeys manages API keys: create prints a new key once (only its hash is
// stored), list shows an owner's keys, revoke revokes one.
func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: baton keys create|list|revoke --owner NAME")
	}
	sub := args[0]
	if sub == "-h" || sub == "-help" || sub == "--help" || sub == "help" {
		sub = "create|list|revoke"
		args = []string{sub, "-h"}
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: baton keys %s --owner NAME [flags]\n\ncreate prints a new API key once (only its hash is stored): --scope read|run|decide|admin\n(repeatable; each includes the ones before it; default admin), --network NAME (repeatable:\nonly those networks' threads), --expires 30d (s, m, h, d, w); list shows an owner's keys, their\nscopes, networks and expiry; revoke KEY_ID revokes one.\n\nFlags:\n", sub)
		fs.PrintDefaults()
	}
	owner := fs.String("owner", "", "the owner (tenant) of the keys (required)")
	name := fs.String("name", "", "a label for the new key (create)")
	var scopes, networks stringList
	fs.Var(&scopes, "scope", "what the new key may do: read, run, decide or admin; repeatable, or comma-separated (create; default admin)")
	fs.Var(&networks, "network", "limit the new key to a network's threads; repeatable (create; default every network)")
	expires := fs.String("expires", "", "the new key expires after this long: 30d, 12h, 2w, 90m (create; default never)")
	database := fs.String("database", "", databaseHelp)
	noMigrate := fs.Bool("no-migrate", false, "refuse to migrate the database; fail if its schema is out of date")
	if err := fs.Parse(reorder(args[1:], map[string]bool{"no-migrate": true})); err != nil {
		return usageError{err}
	}
	if _, err := lf.logger(ctx, stderr); err != nil {
		return err
	}
	if *owner == "" {
		return usagef("want --owner NAME")
	}
	if sub != "create" && (len(scopes) > 0 || len(networks) > 0 || *expires != "") {
		return usagef("--scope, --network and --expires are flags of baton keys create")
	}
	var params store.CreateAPIKeyParams
	if sub == "create" {
		var err error
		if params, err = keyParams(*owner, *name, scopes, networks, *expires, time.Now()); err != nil {
			return usageError{err}
		}
	}
	switch sub {
	case "create", "list":
		if fs.NArg() != 0 {
			return usagef("unexpected arguments %q", fs.Args())
		}
	case "revoke":
		if fs.NArg() != 1 {
			return usagef("want the key id: baton keys revoke --owner NAME KEY_ID")
		}
	default:
		return usagef("unknown subcommand %q: want create, list or revoke", sub)
	}
	st, err := openDatabase(ctx, *database, *noMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "create":
		return keysCreate(ctx, st, &params, stdout, stderr)
	case "list":
		return keysList(ctx, st, *owner, stdout)
	default:
		return keysRevoke(ctx, st, *owner, fs.Arg(0), stdout)
	}
}

// keysCreate creates the key of params, with its audit event, and prints
// its secret alone on stdout (for scripts), the rest on stderr.
func keysCreate(ctx context.Context, st store.Store, params *store.CreateAPIKeyParams, stdout, stderr io.Writer) error {
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: params.OwnerID, Name: params.OwnerID}); err != nil {
		return err
	}
	var k *store.CreatedAPIKey
	err := st.Tx(ctx, func(tx store.Tx) error {
		var err error
		if k, err = tx.CreateAPIKey(ctx, params); err != nil {
			return err
		}
		return auditKey(ctx, tx, store.AuditKeyCreate, k.Key)
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.Secret)
	fmt.Fprintf(stderr, "created key %s (prefix %s) for owner %s, scopes %s, networks %s, expires %s: this is the only time the key is shown\n",
		k.Key.ID, k.Key.Prefix, params.OwnerID, scopeText(k.Key.Scopes), networksText(k.Key.Networks), expiryText(k.Key.ExpiresAt))
	return nil
}

// keysList prints the keys of owner as a table.
func keysList(ctx context.Context, st store.Store, owner string, stdout io.Writer) error {
	keys, err := st.ListAPIKeys(ctx, &store.ListAPIKeysParams{OwnerID: owner})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPREFIX\tNAME\tSCOPES\tNETWORKS\tCREATED\tEXPIRES\tREVOKED")
	for _, k := range keys {
		revoked := "-"
		if !k.RevokedAt.IsZero() {
			revoked = k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, scopeText(k.Scopes), networksText(k.Networks),
			k.CreatedAt.Format(time.RFC3339), expiryText(k.ExpiresAt), revoked)
	}
	return tw.Flush()
}

// keysRevoke revokes owner's key id, with its audit event.
func keysRevoke(ctx context.Context, st store.Store, owner, id string, stdout io.Writer) error {
	var k *store.APIKey
	err := st.Tx(ctx, func(tx store.Tx) error {
		var err error
		if k, err = tx.RevokeAPIKey(ctx, &store.RevokeAPIKeyParams{OwnerID: owner, ID: id}); err != nil {
			return err
		}
		return auditKey(ctx, tx, store.AuditKeyRevoke, k)
	})
	if errors.Is(err, store.ErrNotFound) {
		return usagef("owner %s has no key %s", owner, id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked key %s (prefix %s) of owner %s at %s\n", k.ID, k.Prefix, owner, k.RevokedAt.Format(time.RFC3339))
	return nil
}

// keyParams are the params of baton keys create: scopes parsed
// (store.ParseScopes; none given is admin), networks checked, expires
// (ParseExpires) counted from now.
func keyParams(owner, name string, scopes, networks []string, expires string, now time.Time) (store.CreateAPIKeyParams, error) {
	p := store.CreateAPIKeyParams{OwnerID: owner, Name: name}
	if len(scopes) > 0 {
		sc, err := store.ParseScopes(scopes)
		if err != nil {
			return p, fmt.Errorf("--scope: %w", err)
		}
		p.Scopes = sc
	}
	for _, n := range networks {
		if n == "" || strings.ContainsFunc(n, unicode.IsSpace) || !utf8.ValidString(n) || strings.ContainsRune(n, 0) {
			return p, fmt.Errorf("--network %q: want a network's name", n)
		}
		if !slices.Contains(p.Networks, n) {
			p.Networks = append(p.Networks, n)
		}
	}
	if expires != "" {
		d, err := ParseExpires(expires)
		if err != nil {
			return p, fmt.Errorf("--expires: %w", err)
		}
		p.ExpiresAt = now.Add(d)
	}
	return p, nil
}

// maxExpires bounds --expires: 100 years.
const maxExpires = 100 * 365 * 24 * time.Hour

// ParseExpires parses the lifetime of a key: one or more numbers each with
// a unit, s, m, h, d (24 hours) or w (7 days) — "30d", "12h", "1d12h". It
// is positive and at most 100 years.
func ParseExpires(s string) (time.Duration, error) {
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	if s == "" {
		return 0, fmt.Errorf("empty duration: want a number and a unit, as 30d")
	}
	var total time.Duration
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i || j-i > 9 {
			return 0, fmt.Errorf("duration %q: want numbers of at most 9 digits, each with a unit (s, m, h, d, w), as 30d", s)
		}
		n, _ := strconv.Atoi(s[i:j])
		if j == len(s) {
			return 0, fmt.Errorf("duration %q: %d has no unit: want s, m, h, d or w", s, n)
		}
		u, ok := units[s[j]]
		if !ok {
			return 0, fmt.Errorf("duration %q: unknown unit %q: want s, m, h, d or w", s, s[j])
		}
		if time.Duration(n) > (maxExpires-total)/u {
			return 0, fmt.Errorf("duration %q is longer than 100 years", s)
		}
		total += time.Duration(n) * u
		i = j + 1
	}
	if total <= 0 {
		return 0, fmt.Errorf("duration %q is not positive", s)
	}
	return total, nil
}

func scopeText(sc []store.Scope) string { return strings.ReplaceAll(store.JoinScopes(sc), " ", ",") }

func networksText(n []string) string {
	if len(n) == 0 {
		return "*"
	}
	return strings.Join(n, ",")
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

// auditKey records a key created or revoked on the command line in the
// owner's audit log, in the transaction that does it.
func auditKey(ctx context.Context, tx store.Tx, kind string, k *store.APIKey) error {
	detail := map[string]any{"name": k.Name, "prefix": k.Prefix, "scopes": k.Scopes, "networks": k.Networks}
	if !k.ExpiresAt.IsZero() {
		detail["expires_at"] = k.ExpiresAt
	}
	if !k.RevokedAt.IsZero() {
		detail["revoked_at"] = k.RevokedAt
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = tx.AppendAudit(ctx, &store.AppendAuditParams{OwnerID: k.OwnerID, Kind: kind, KeyID: k.ID, Actor: store.ActorCLI, Detail: b})
	return err
}
