package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/linkd/linkd/cmd/linkd/app"
)

func copyLogCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "copy-log --to postgres://...",
		Short: "Copy the event log into a PostgreSQL database (from make run to a deployment)",
		Long: `copy-log copies every event of the log linkd runs on (the embedded store
of the data directory, or LINKD_EVENTSTORE's) into the PostgreSQL database
--to names, with its ids, streams, versions and times. The database must
be empty, or hold the start of this log from an earlier copy: the copy
goes on from there. Stop linkd serve on an embedded data directory first.

Then serve with LINKD_EVENTSTORE set to that database, after rebuilding
the read models from it with linkd replay (positions differ between
stores). See docs/operations.md, "Changing the event store".`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("copy-log: --to is required")
			}
			cfg, err := config(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err = app.CopyLog(ctx, cfg, to, app.NewLogger(cfg, os.Stderr), os.Stdout)
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database to copy the log into (postgres://...)")
	return cmd
}
