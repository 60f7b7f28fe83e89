package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

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
		fmt.Fprintf(fs.Output(), "usage: baton keys %s --owner NAME [flags]\n\ncreate prints a new API key once (only its hash is stored); list shows an owner's keys;\nrevoke KEY_ID revokes one.\n\nFlags:\n", sub)
		fs.PrintDefaults()
	}
	owner := fs.String("owner", "", "the owner (tenant) of the keys (required)")
	name := fs.String("name", "", "a label for the new key (create)")
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
	url, err := resolveDatabase(*database)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, url, *noMigrate)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactURL(url), err)
	}
	defer st.Close()
	switch sub {
	case "create":
		if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: *owner, Name: *owner}); err != nil {
			return err
		}
		k, err := st.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: *owner, Name: *name})
		if err != nil {
			return err
		}
		// The secret alone on stdout, for scripts; the rest on stderr.
		fmt.Fprintln(stdout, k.Secret)
		fmt.Fprintf(stderr, "created key %s (prefix %s) for owner %s: this is the only time the key is shown\n", k.Key.ID, k.Key.Prefix, *owner)
		return nil
	case "list":
		keys, err := st.ListAPIKeys(ctx, &store.ListAPIKeysParams{OwnerID: *owner})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPREFIX\tNAME\tCREATED\tREVOKED")
		for _, k := range keys {
			revoked := "-"
			if !k.RevokedAt.IsZero() {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, k.CreatedAt.Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	default:
		k, err := st.RevokeAPIKey(ctx, &store.RevokeAPIKeyParams{OwnerID: *owner, ID: fs.Arg(0)})
		if errors.Is(err, store.ErrNotFound) {
			return usagef("owner %s has no key %s", *owner, fs.Arg(0))
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked key %s (prefix %s) of owner %s at %s\n", k.ID, k.Prefix, *owner, k.RevokedAt.Format(time.RFC3339))
		return nil
	}
}
