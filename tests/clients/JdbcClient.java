// pgjdbc (Debian's libpostgresql-jdbc-java) against a cellar gateway.
import java.sql.*;

public class JdbcClient {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0])) {
            // More than prepareThreshold (5) runs: the driver switches to a
            // named server-side statement.
            try (PreparedStatement ps = c.prepareStatement("SELECT ?::int4 + 1, ?::text")) {
                for (int i = 0; i < 8; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "x" + i);
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "a row");
                        check(rs.getInt(1) == i + 1 && rs.getString(2).equals("x" + i), "values");
                    }
                }
            }
            check(c.isValid(5), "isValid");
            // fetchSize in a transaction: a portal read in steps.
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                st.setFetchSize(3);
                int n = 0;
                try (ResultSet rs = st.executeQuery("SHOW ALL")) {
                    while (rs.next()) n++;
                }
                check(n > 10, "SHOW ALL rows: " + n);
            }
            c.commit();
            try (Statement st = c.createStatement()) {
                st.executeQuery("SELECT 1/0");
                check(false, "no error");
            } catch (SQLException e) {
                check("22012".equals(e.getSQLState()), "SQLSTATE " + e.getSQLState());
            }
            c.rollback();
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseMajorVersion() == 15, "major version " + md.getDatabaseMajorVersion());
            c.setAutoCommit(true);
            tables(c, md);
            resultMetaData(c);
        }
        System.out.println("ok");
    }

    // A table in both of cellar's shapes, written and read through
    // prepared statements, then found through DatabaseMetaData.
    static void tables(Connection c, DatabaseMetaData md) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS jdbc_web");
            st.execute("CREATE TABLE jdbc_web (_key TEXT PRIMARY KEY, \"info:rank\" BIGINT, \"anchor:\" TEXT)");
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_web (_key, \"info:rank\") VALUES (?, ?)")) {
            for (int i = 0; i < 10; i++) {
                ps.setString(1, "com.example/" + i);
                ps.setLong(2, i * 10L);
                check(ps.executeUpdate() == 1, "insert count");
            }
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT \"info:rank\" FROM jdbc_web WHERE _key = ?")) {
            ps.setString(1, "com.example/7");
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next() && rs.getLong(1) == 70 && !rs.next(), "point read");
            }
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_web (_key) VALUES (?)")) {
            ps.setString(1, "com.example/7");
            ps.executeUpdate();
            check(false, "a duplicate key was accepted");
        } catch (SQLException e) {
            check("23505".equals(e.getSQLState()), "duplicate key SQLSTATE " + e.getSQLState());
        }
        try (ResultSet rs = md.getTables(null, "public", "jdbc_web", new String[] {"TABLE"})) {
            check(rs.next() && rs.getString("TABLE_NAME").equals("jdbc_web") && !rs.next(), "getTables");
        }
        String[] want = {"_key:text", "info:rank:int8", "anchor:jsonb"};
        try (ResultSet rs = md.getColumns(null, "public", "jdbc_web", "%")) {
            for (String w : want) {
                check(rs.next(), "getColumns: missing " + w);
                String got = rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME");
                check(got.equals(w), "getColumns: " + got + ", want " + w);
            }
            check(!rs.next(), "getColumns: extra rows");
        }
        try (ResultSet rs = md.getPrimaryKeys(null, "public", "jdbc_web")) {
            check(rs.next() && rs.getString("COLUMN_NAME").equals("_key") && rs.getInt("KEY_SEQ") == 1 && !rs.next(), "getPrimaryKeys");
        }
        boolean publicSchema = false;
        try (ResultSet rs = md.getSchemas()) {
            while (rs.next()) publicSchema |= rs.getString("TABLE_SCHEM").equals("public");
        }
        check(publicSchema, "getSchemas lists public");
        int types = 0;
        try (ResultSet rs = md.getTypeInfo()) {
            while (rs.next()) types++;
        }
        check(types > 20, "getTypeInfo rows: " + types);
        try (Statement st = c.createStatement()) {
            st.execute("DROP TABLE jdbc_web");
        }
    }

    // ResultSetMetaData reads the table OID, attnum and type modifier of
    // RowDescription: the table's name, the column's NOT NULL (from
    // pg_attribute), varchar's length and numeric's precision and scale.
    static void resultMetaData(Connection c) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS jdbc_meta");
            st.execute("CREATE TABLE jdbc_meta (id BIGINT PRIMARY KEY, name VARCHAR(12) NOT NULL, price NUMERIC(10,2), note TEXT)");
            try (ResultSet rs = st.executeQuery("SELECT id, name, price, note, name::varchar(5) AS short, price * 2 AS twice FROM jdbc_meta")) {
                ResultSetMetaData m = rs.getMetaData();
                String[] tables = {"jdbc_meta", "jdbc_meta", "jdbc_meta", "jdbc_meta", "", ""};
                int[] nullable = {ResultSetMetaData.columnNoNulls, ResultSetMetaData.columnNoNulls, ResultSetMetaData.columnNullable,
                    ResultSetMetaData.columnNullable, ResultSetMetaData.columnNullableUnknown, ResultSetMetaData.columnNullableUnknown};
                int[] precision = {19, 12, 10, Integer.MAX_VALUE, 5, 0};
                int[] scale = {0, 0, 2, 0, 0, 0};
                for (int i = 1; i <= 6; i++) {
                    String got = m.getTableName(i) + " " + m.isNullable(i) + " " + m.getPrecision(i) + " " + m.getScale(i);
                    String want = tables[i - 1] + " " + nullable[i - 1] + " " + precision[i - 1] + " " + scale[i - 1];
                    check(got.equals(want), "metadata of " + m.getColumnName(i) + ": " + got + ", want " + want);
                }
            }
            st.execute("DROP TABLE jdbc_meta");
        }
    }
}
