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
        }
        System.out.println("ok");
    }
}
