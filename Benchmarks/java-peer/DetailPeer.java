// A Java peer for the detail request, the shape HTTP-RPC's server side has: a servlet on Jetty,
// one thread per request, blocking JDBC (PgJDBC), the parent statement and then one statement
// per attached array, each row written as a JSON object keyed by column label. Benchmark only
// (Benchmarks/java-peer/run); not part of Spout.
//
//   java -cp <jetty9, servlet-api, postgresql jars>:. DetailPeer PORT JDBC_URL USER SQL_DIRECTORY POOL_SIZE
//
// GET /employees/{n}?details=titles&details=salaries answers what Spout answers: the
// employee's columns, then "titles" and "salaries" arrays; dates as epoch milliseconds (UTC),
// integers as numbers, text as JSON strings. The statements are Spout's own SQL files
// (sql/employees/employee.sql, titles.sql, salaries.sql) with :employeeNumber bound as the
// one parameter.
//
// GET /health answers {"status":"ok"} as Spout's /health does, with no database: the server's
// HTTP floor, measured beside Spout's own.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class DetailPeer extends HttpServlet {
    private static final long MILLISECONDS_PER_DAY = 86_400_000L;

    /** A connection with its three statements prepared once. */
    private static final class Lease {
        final PreparedStatement employee;
        final PreparedStatement titles;
        final PreparedStatement salaries;

        Lease(Connection connection, String employee, String titles, String salaries) throws SQLException {
            this.employee = connection.prepareStatement(employee);
            this.titles = connection.prepareStatement(titles);
            this.salaries = connection.prepareStatement(salaries);
        }
    }

    private final BlockingQueue<Lease> pool;

    private DetailPeer(BlockingQueue<Lease> pool) {
        this.pool = pool;
    }

    /** `:employeeNumber` becomes `?`; the SQL files' comments stay (PostgreSQL ignores them). */
    private static String statement(Path directory, String file) throws IOException {
        return Files.readString(directory.resolve("employees").resolve(file)).replace(":employeeNumber", "?");
    }

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String path = request.getRequestURI();
        long number;
        try {
            number = Long.parseLong(path.substring(path.lastIndexOf('/') + 1));
        } catch (NumberFormatException error) {
            response.sendError(400);
            return;
        }
        String[] details = request.getParameterValues("details");
        Lease lease;
        try {
            lease = this.pool.take();
        } catch (InterruptedException error) {
            response.sendError(503);
            return;
        }
        StringBuilder json = new StringBuilder(512);
        try {
            lease.employee.setLong(1, number);
            try (ResultSet parent = lease.employee.executeQuery()) {
                if (!parent.next()) {
                    response.sendError(404);
                    return;
                }
                json.append('{');
                writeColumns(parent, json);
            }
            if (details != null) {
                for (String detail : details) {
                    PreparedStatement child = detail.equals("titles") ? lease.titles : detail.equals("salaries") ? lease.salaries : null;
                    if (child == null) continue;
                    json.append(",\"").append(detail).append("\":[");
                    child.setLong(1, number);
                    try (ResultSet rows = child.executeQuery()) {
                        boolean first = true;
                        while (rows.next()) {
                            if (!first) json.append(',');
                            first = false;
                            json.append('{');
                            writeColumns(rows, json);
                            json.append('}');
                        }
                    }
                    json.append(']');
                }
            }
            json.append('}');
        } catch (SQLException error) {
            response.sendError(500);
            return;
        } finally {
            this.pool.add(lease);
        }
        byte[] body = json.toString().getBytes(StandardCharsets.UTF_8);
        response.setContentType("application/json");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    private static void writeColumns(ResultSet row, StringBuilder json) throws SQLException {
        ResultSetMetaData columns = row.getMetaData();
        for (int index = 1; index <= columns.getColumnCount(); index++) {
            if (index > 1) json.append(',');
            json.append('"').append(columns.getColumnLabel(index)).append("\":");
            switch (columns.getColumnType(index)) {
                case Types.INTEGER, Types.BIGINT, Types.SMALLINT -> {
                    long value = row.getLong(index);
                    if (row.wasNull()) json.append("null"); else json.append(value);
                }
                case Types.DATE -> {
                    java.time.LocalDate date = row.getObject(index, java.time.LocalDate.class);
                    if (date == null) json.append("null"); else json.append(date.toEpochDay() * MILLISECONDS_PER_DAY);
                }
                default -> {
                    String text = row.getString(index);
                    if (text == null) json.append("null"); else writeString(text, json);
                }
            }
        }
    }

    private static void writeString(String text, StringBuilder json) {
        json.append('"');
        for (int index = 0; index < text.length(); index++) {
            char character = text.charAt(index);
            switch (character) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                default -> {
                    if (character < 0x20) json.append(String.format("\\u%04x", (int) character)); else json.append(character);
                }
            }
        }
        json.append('"');
    }

    /** The HTTP floor: a constant body, no database. */
    private static final class Health extends HttpServlet {
        private static final byte[] BODY = "{\"status\":\"ok\"}".getBytes(StandardCharsets.UTF_8);

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            response.setContentType("application/json");
            response.setContentLength(BODY.length);
            response.getOutputStream().write(BODY);
        }
    }

    public static void main(String[] arguments) throws Exception {
        int port = Integer.parseInt(arguments[0]);
        String url = arguments[1];
        Properties properties = new Properties();
        properties.setProperty("user", arguments[2]);
        Path sql = Path.of(arguments[3]);
        int size = Integer.parseInt(arguments[4]);
        String employee = statement(sql, "employee.sql");
        String titles = statement(sql, "titles.sql");
        String salaries = statement(sql, "salaries.sql");
        BlockingQueue<Lease> pool = new ArrayBlockingQueue<>(size);
        for (int index = 0; index < size; index++) {
            pool.add(new Lease(DriverManager.getConnection(url, properties), employee, titles, salaries));
        }
        Server server = new Server(port);
        ServletContextHandler context = new ServletContextHandler();
        context.addServlet(new ServletHolder(new DetailPeer(pool)), "/employees/*");
        context.addServlet(new ServletHolder(new Health()), "/health");
        server.setHandler(context);
        server.start();
        System.out.println("listening on " + port);
        server.join();
    }
}
