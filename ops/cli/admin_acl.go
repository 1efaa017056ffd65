package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/querykv"
	"github.com/cellardb/cellar/pgwire"
)

// cellar admin's security commands: the gateway's users (in Chubby, or in
// a users file with -users), the tables' per-family ACLs, and the
// Bigtable API's tokens. docs/security.md describes what they change.

const adminACLUsage = `usage:
  cellar admin user add [-superuser] [-md5] [-users FILE] NAME   (the password is read from stdin)
  cellar admin user passwd [-md5] NAME                           (the new password is read from stdin)
  cellar admin user del NAME | user ls
  cellar admin grant|revoke -table T [-family F] [-read] [-write] PRINCIPAL   (no family: every family; * is everyone)
  cellar admin acl show TABLE | acl owner TABLE PRINCIPAL | acl rm TABLE
  cellar admin token add PRINCIPAL | token ls | token rm PRINCIPAL
Every command takes -chubby, -cell, -secret, -secret-file and -timeout.`

// runAdminACL runs the admin commands of this file; ok is false for
// another command.
func runAdminACL(args []string, env Env) (code int, ok bool) {
	var sub string
	switch args0(args) {
	case "user", "acl", "token":
		if len(args) < 2 {
			fmt.Fprintln(env.Stderr, adminACLUsage)
			return 2, true
		}
		sub = args[0] + " " + args[1]
	case "grant", "revoke":
		sub = args[0]
	default:
		return 0, false
	}
	rest := args[1:]
	if strings.Contains(sub, " ") {
		rest = args[2:]
	}
	cmds := map[string]func(*adminCmd) error{
		"user add": adminUserAdd, "user passwd": adminUserPasswd, "user del": adminUserDel, "user ls": adminUserLs,
		"grant": adminGrant, "revoke": adminGrant,
		"acl show": adminACLShow, "acl owner": adminACLOwner, "acl rm": adminACLRm,
		"token add": adminTokenAdd, "token ls": adminTokenLs, "token rm": adminTokenRm,
	}
	run, found := cmds[sub]
	if !found {
		fmt.Fprintln(env.Stderr, adminACLUsage)
		return 2, true
	}
	c := &adminCmd{name: "admin " + sub, env: env}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	c.cf.register(fs)
	c.users = fs.String("users", "", "a users file instead of Chubby (user add only)")
	c.super = fs.Bool("superuser", false, "make the user a superuser")
	c.md5 = fs.Bool("md5", false, "also keep an md5 hash, for clients that only speak md5 authentication")
	c.table = fs.String("table", "", "the table")
	c.family = fs.String("family", model.AnyFamily, "the family (* or none: every family)")
	c.read = fs.Bool("read", false, "the right to read")
	c.write = fs.Bool("write", false, "the right to write")
	c.pos, c.err = parseFlags(fs, rest, env, "CELLAR_ADMIN")
	if c.err != nil {
		return flagExit(c.err), true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.cf.timeout)
	defer cancel()
	c.ctx = ctx
	err := run(c)
	if c.sess != nil {
		c.sess.Close(context.Background())
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.Stderr, "cellar %s: %s\n%s\n", c.name, ue.Error(), adminACLUsage)
		return 2, true
	}
	if err != nil {
		return fail(env, c.name, err), true
	}
	return 0, true
}

// adminCmd is one admin command's flags and connection.
type adminCmd struct {
	name                    string
	env                     Env
	ctx                     context.Context
	cf                      clusterFlags
	users, table, family    *string
	super, md5, read, write *bool
	pos                     []string
	err                     error
	sess                    *coordlock.Session
}

// args checks that the command got n positional arguments.
func (c *adminCmd) args(n int, what string) error {
	if len(c.pos) != n {
		return usagef("expected %s", what)
	}
	return nil
}

func (c *adminCmd) session() (*coordlock.Session, error) {
	if c.sess == nil {
		s, err := c.cf.session(c.ctx)
		if err != nil {
			return nil, err
		}
		c.sess = s
	}
	return c.sess, nil
}

func readPassword(env Env) (string, error) {
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", fmt.Errorf("no password on stdin (%v)", err)
	}
	return password, nil
}

func adminUserAdd(c *adminCmd) error {
	if err := c.args(1, "one user NAME"); err != nil {
		return err
	}
	password, err := readPassword(c.env)
	if err != nil {
		return err
	}
	u, err := pgwire.NewUser(c.pos[0], password, *c.super, *c.md5)
	if err != nil {
		return err
	}
	if *c.users != "" {
		if err := (&pgwire.FileUsers{Path: *c.users}).Put(u); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "user %s saved in %s (SCRAM-SHA-256, %d iterations)\n", u.Name, *c.users, pgwire.SCRAMIterations)
		return nil
	}
	if err := c.putUser(u); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "user %s saved in %s (SCRAM-SHA-256, %d iterations)\n", u.Name, coordlock.UserPath(u.Name), pgwire.SCRAMIterations)
	return nil
}

func (c *adminCmd) putUser(u *pgwire.User) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	return s.WriteFile(c.ctx, coordlock.UserPath(u.Name), js)
}

func (c *adminCmd) getUser(name string) (*pgwire.User, error) {
	s, err := c.session()
	if err != nil {
		return nil, err
	}
	data, ok, err := s.ReadFile(c.ctx, coordlock.UserPath(name))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no user %q in %s", name, coordlock.UserDir)
	}
	var u pgwire.User
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, fmt.Errorf("%s: %w", coordlock.UserPath(name), err)
	}
	return &u, nil
}

func adminUserPasswd(c *adminCmd) error {
	if err := c.args(1, "one user NAME"); err != nil {
		return err
	}
	old, err := c.getUser(c.pos[0])
	if err != nil {
		return err
	}
	password, err := readPassword(c.env)
	if err != nil {
		return err
	}
	u, err := pgwire.NewUser(old.Name, password, old.Superuser, *c.md5 || old.MD5 != "")
	if err != nil {
		return err
	}
	if err := c.putUser(u); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "password of %s changed\n", u.Name)
	return nil
}

func adminUserDel(c *adminCmd) error {
	if err := c.args(1, "one user NAME"); err != nil {
		return err
	}
	if _, err := c.getUser(c.pos[0]); err != nil {
		return err
	}
	if err := c.sess.DeleteFile(c.ctx, coordlock.UserPath(c.pos[0])); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "user %s deleted\n", c.pos[0])
	return nil
}

func adminUserLs(c *adminCmd) error {
	if err := c.args(0, "no arguments"); err != nil {
		return err
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	files, err := s.List(c.ctx, coordlock.UserDir)
	if err != nil {
		return err
	}
	for _, f := range files {
		var u pgwire.User
		if err := json.Unmarshal(f.Contents, &u); err != nil {
			return fmt.Errorf("%s/%s: %w", coordlock.UserDir, f.Name, err)
		}
		role := "user"
		if u.Superuser {
			role = "superuser"
		}
		fmt.Fprintf(c.env.Stdout, "%s\t%s\n", u.Name, role)
	}
	return nil
}

// checkTable makes sure table (and family, unless it is every family)
// exists, through the master.
func (c *adminCmd) checkTable(table, family string) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	kv := &querykv.KV{MasterAddr: s.MasterAddr(""), Secret: c.cf.secret}
	defer kv.Close()
	tables, err := kv.Tables(c.ctx)
	if err != nil {
		return fmt.Errorf("list the tables: %w", err)
	}
	schema, ok := tables[table]
	if !ok {
		return fmt.Errorf("table %q does not exist", table)
	}
	if family == model.AnyFamily {
		return nil
	}
	for _, f := range schema.Families {
		if f.Name == family {
			return nil
		}
	}
	return fmt.Errorf("table %q has no family %q", table, family)
}

func adminGrant(c *adminCmd) error {
	grant := strings.HasSuffix(c.name, "grant")
	switch {
	case len(c.pos) != 1:
		return usagef("expected one PRINCIPAL")
	case *c.table == "":
		return usagef("-table is required")
	case !*c.read && !*c.write:
		return usagef("say -read, -write or both")
	}
	family := *c.family
	if family == "" {
		family = model.AnyFamily
	}
	if err := c.checkTable(*c.table, family); err != nil {
		return err
	}
	err := coordlock.ACLFiles{Session: c.sess}.UpdateACL(c.ctx, *c.table, func(a *model.ACL) (*model.ACL, error) {
		if a == nil {
			if !grant {
				return nil, nil
			}
			a = &model.ACL{}
		}
		if grant {
			a.Grant(family, c.pos[0], *c.read, *c.write)
		} else {
			a.Revoke(family, c.pos[0], *c.read, *c.write)
		}
		return a, nil
	})
	if err != nil {
		return err
	}
	return adminACLPrint(c, *c.table)
}

func adminACLPrint(c *adminCmd, table string) error {
	data, ok, err := coordlock.ACLFiles{Session: c.sess}.ReadACL(c.ctx, table)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(c.env.Stdout, "table %s has no ACL: every principal may read and write it\n", table)
		return nil
	}
	a, err := model.ParseACL(data)
	if err != nil {
		return fmt.Errorf("%s: %w", coordlock.ACLPath(table), err)
	}
	fmt.Fprintf(c.env.Stdout, "table %s (%s):\n%s", table, coordlock.ACLPath(table), a)
	return nil
}

func adminACLShow(c *adminCmd) error {
	if err := c.args(1, "one TABLE"); err != nil {
		return err
	}
	if _, err := c.session(); err != nil {
		return err
	}
	return adminACLPrint(c, c.pos[0])
}

func adminACLOwner(c *adminCmd) error {
	if err := c.args(2, "TABLE PRINCIPAL"); err != nil {
		return err
	}
	if err := c.checkTable(c.pos[0], model.AnyFamily); err != nil {
		return err
	}
	err := coordlock.ACLFiles{Session: c.sess}.UpdateACL(c.ctx, c.pos[0], func(a *model.ACL) (*model.ACL, error) {
		if a == nil {
			a = &model.ACL{}
		}
		a.Owner = c.pos[1]
		return a, nil
	})
	if err != nil {
		return err
	}
	return adminACLPrint(c, c.pos[0])
}

func adminACLRm(c *adminCmd) error {
	if err := c.args(1, "one TABLE"); err != nil {
		return err
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	if err := s.DeleteFile(c.ctx, coordlock.ACLPath(c.pos[0])); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "table %s has no ACL now: every principal may read and write it\n", c.pos[0])
	return nil
}

func adminTokenAdd(c *adminCmd) error {
	if err := c.args(1, "one PRINCIPAL"); err != nil {
		return err
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	token := "cellar-" + hex.EncodeToString(b)
	js, _ := json.Marshal(coordlock.TokenFile{Principal: c.pos[0]})
	if err := s.WriteFile(c.ctx, coordlock.TokenPath(token), js); err != nil {
		return err
	}
	// The token is shown once; only its hash is kept.
	fmt.Fprintln(c.env.Stdout, token)
	return nil
}

func (c *adminCmd) tokens() (map[string][]string, error) {
	s, err := c.session()
	if err != nil {
		return nil, err
	}
	files, err := s.List(c.ctx, coordlock.TokenDir)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{} // principal -> token files
	for _, f := range files {
		var tf coordlock.TokenFile
		if err := json.Unmarshal(f.Contents, &tf); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", coordlock.TokenDir, f.Name, err)
		}
		out[tf.Principal] = append(out[tf.Principal], f.Name)
	}
	return out, nil
}

func adminTokenLs(c *adminCmd) error {
	if err := c.args(0, "no arguments"); err != nil {
		return err
	}
	byName, err := c.tokens()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(c.env.Stdout, "%s\t%d token(s)\n", n, len(byName[n]))
	}
	return nil
}

func adminTokenRm(c *adminCmd) error {
	if err := c.args(1, "one PRINCIPAL"); err != nil {
		return err
	}
	byName, err := c.tokens()
	if err != nil {
		return err
	}
	files := byName[c.pos[0]]
	if len(files) == 0 {
		return fmt.Errorf("principal %q has no tokens", c.pos[0])
	}
	for _, f := range files {
		if err := c.sess.DeleteFile(c.ctx, coordlock.TokenDir+"/"+f); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.env.Stdout, "%d token(s) of %s deleted\n", len(files), c.pos[0])
	return nil
}
