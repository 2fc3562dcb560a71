// Command pgvariant prepares a database for bench/pg-variant.sh: it drops
// and creates the database -db on the server -url names, creates linkd's
// schema in it (as linkd serve would at start), applies the SQL files -sql
// lists, in order (bench/pg-variants), and prints the connection string of
// the new database for LINKD_EVENTSTORE. The SQL is applied before linkd
// starts, so that the statements linkd prepares see the altered schema.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore/postgres"
)

func main() {
	server := flag.String("url", "", "connection string of a database on the server (postgres://...), used to drop and create -db")
	db := flag.String("db", "linkd_variant", "the database to create afresh")
	sqlFiles := flag.String("sql", "", "SQL files to apply after the schema, comma-separated, in order (bench/pg-variants)")
	flag.Parse()
	ctx := context.Background()
	if *server == "" {
		log.Fatal("pgvariant: -url is needed")
	}
	conn, err := pgx.Connect(ctx, *server)
	if err != nil {
		log.Fatal(err)
	}
	ident := pgx.Identifier{*db}.Sanitize()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)", "CREATE DATABASE " + ident} {
		if _, err := conn.Exec(ctx, q); err != nil {
			log.Fatalf("pgvariant: %s: %v", q, err)
		}
	}
	conn.Close(ctx)
	u, err := url.Parse(*server)
	if err != nil {
		log.Fatal(err)
	}
	u.Path = "/" + *db
	store := u.String()
	if err := postgres.Migrate(ctx, store); err != nil {
		log.Fatal(err)
	}
	if *sqlFiles != "" {
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			log.Fatal(err)
		}
		for _, f := range strings.Split(*sqlFiles, ",") {
			sql, err := os.ReadFile(f)
			if err != nil {
				log.Fatal(err)
			}
			// Simple protocol: a file may hold several statements.
			if _, err := conn.PgConn().Exec(ctx, string(sql)).ReadAll(); err != nil {
				log.Fatalf("pgvariant: %s: %v", f, err)
			}
		}
		conn.Close(ctx)
	}
	fmt.Println(store)
}
