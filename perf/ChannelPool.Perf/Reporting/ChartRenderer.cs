using System.ComponentModel;
using System.Diagnostics;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace ChannelPool.Perf.Reporting;

/// <summary>What <see cref="ChartRenderer.RenderAsync"/> wrote.</summary>
/// <param name="SpecFiles">The Vega-Lite spec of every chart (<c>&lt;Name&gt;.vl.json</c>), always written.</param>
/// <param name="Written">The SVG files drawn (<c>&lt;Name&gt;.svg</c>), in chart order.</param>
/// <param name="Problem">Why some or all charts were not drawn, or <see langword="null"/> when every chart was.</param>
internal sealed record ChartRenderResult(IReadOnlyList<string> SpecFiles, IReadOnlyList<string> Written, string? Problem)
{
    /// <summary>Whether every chart has its SVG.</summary>
    public bool AllDrawn => Problem is null;
}

/// <summary>
/// Turns <see cref="Chart"/>s into Vega-Lite specs and draws them as SVG with Node.js (<c>Charts/render.mjs</c>).
/// A machine without Node still gets the specs; the result then says why there are no SVGs instead of throwing.
/// </summary>
internal sealed class ChartRenderer
{
    /// <summary>How long <c>npm ci</c> may take to install vega and vega-lite.</summary>
    public static readonly TimeSpan InstallTimeout = TimeSpan.FromMinutes(5);

    /// <summary>How long one <c>node render.mjs</c> run, drawing all charts, may take.</summary>
    public static readonly TimeSpan RenderTimeout = TimeSpan.FromMinutes(2);

    private const string SpecExtension = ".vl.json";
    private const string RenderScript = "render.mjs";
    private const string LockFile = "package-lock.json";

    // Copied beside the binary by the csproj; the same set is copied again when the binary's folder is read-only.
    private static readonly string[] RendererFiles = ["package.json", LockFile, RenderScript, ".npmrc"];

    // npm ci leaves node_modules alone when the lock changes later (a version bump), so the lock it installed
    // is kept here and compared, rather than trusting that node_modules/vega-lite exists.
    private static readonly string InstalledLockStamp = Path.Combine("node_modules", ".channelpool-installed-lock.json");

    // A fixed "\n" keeps the spec byte-identical across operating systems.
    private static readonly JsonSerializerOptions SpecJsonOptions = new() { WriteIndented = true, NewLine = "\n" };

    private readonly string rendererDirectory;

    /// <summary>Creates a renderer that uses the <c>Charts</c> folder beside the executing assembly.</summary>
    public ChartRenderer()
        : this(Path.Combine(AppContext.BaseDirectory, "Charts"))
    {
    }

    /// <summary>Creates a renderer that uses the chart renderer files (<c>render.mjs</c>, <c>package.json</c>, …) in <paramref name="rendererDirectory"/>.</summary>
    public ChartRenderer(string rendererDirectory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(rendererDirectory);
        this.rendererDirectory = Path.GetFullPath(rendererDirectory);
    }

    /// <summary>Builds the Vega-Lite spec of <paramref name="chart"/>, with its data inline. The same chart always gives the same bytes.</summary>
    /// <exception cref="ArgumentException">The chart has no usable name or points; the message names the chart and the problem.</exception>
    public static string ToVegaLite(Chart chart)
    {
        Validate(chart);
        var bars = chart.Kind == ChartKind.GroupedBar;
        var spec = new JsonObject
        {
            ["description"] = chart.Name,
            ["title"] = new JsonObject { ["text"] = chart.Title },
            ["width"] = 640,
            ["height"] = 360,
            ["data"] = new JsonObject { ["values"] = new JsonArray([.. chart.Points.Select(point => DataRow(chart.Kind, point))]) },
            ["mark"] = bars ? new JsonObject { ["type"] = "bar" } : new JsonObject { ["type"] = "line", ["point"] = true },
            ["encoding"] = Encoding(chart),
            ["config"] = new JsonObject
            {
                ["font"] = "sans-serif",
                ["title"] = new JsonObject { ["fontSize"] = 18, ["anchor"] = "start", ["offset"] = 12 },
                ["axis"] = new JsonObject { ["labelFontSize"] = 13, ["titleFontSize"] = 14 },
                // Series names such as "SignalR long polling" are the point of the legend; the default 160 px cuts them.
                ["legend"] = new JsonObject { ["labelFontSize"] = 13, ["titleFontSize"] = 14, ["labelLimit"] = 320 },
            },
        };

        return spec.ToJsonString(SpecJsonOptions);
    }

    /// <summary>
    /// Writes <c>&lt;Name&gt;.vl.json</c> for every chart into <paramref name="outputDirectory"/>, then draws each as
    /// <c>&lt;Name&gt;.svg</c> when Node.js is on PATH, installing vega and vega-lite with <c>npm ci</c> on first use.
    /// </summary>
    /// <exception cref="ArgumentException">A chart is invalid or two charts share a name; the message names the chart and the problem.</exception>
    public async Task<ChartRenderResult> RenderAsync(IReadOnlyList<Chart> charts, string outputDirectory, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(charts);
        ArgumentException.ThrowIfNullOrWhiteSpace(outputDirectory);
        var specs = charts.Select(ToVegaLite).ToList();
        var duplicate = charts.GroupBy(chart => chart.Name, StringComparer.OrdinalIgnoreCase).FirstOrDefault(group => group.Count() > 1);
        if (duplicate is not null)
        {
            throw new ArgumentException($"Two charts are named '{duplicate.Key}'; each chart needs its own name because it is its file name.", nameof(charts));
        }

        outputDirectory = Path.GetFullPath(outputDirectory);
        Directory.CreateDirectory(outputDirectory);
        var specFiles = new List<string>(charts.Count);
        for (var i = 0; i < charts.Count; i++)
        {
            var specFile = Path.Combine(outputDirectory, charts[i].Name + SpecExtension);
            await File.WriteAllTextAsync(specFile, specs[i], cancellationToken);
            // An SVG left from an earlier run would otherwise be reported as drawn by this one.
            File.Delete(SvgFileOf(specFile));
            specFiles.Add(specFile);
        }

        var problem = specFiles.Count == 0 ? null : await DrawAsync(specFiles, outputDirectory, cancellationToken);
        var written = specFiles.Select(SvgFileOf).Where(File.Exists).ToList();
        return new ChartRenderResult(specFiles, written, problem);
    }

    /// <summary>The full path of <paramref name="command"/> (for example <c>node</c>) on PATH, or <see langword="null"/> when it is not there.</summary>
    public static string? FindOnPath(string command)
    {
        string[] extensions = OperatingSystem.IsWindows() ? [".exe", ".cmd"] : [""];
        var path = Environment.GetEnvironmentVariable("PATH") ?? string.Empty;
        return path.Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .SelectMany(directory => extensions.Select(extension => Path.Combine(directory, command + extension)))
            .FirstOrDefault(File.Exists);
    }

    private static void Validate(Chart chart)
    {
        ArgumentNullException.ThrowIfNull(chart);
        if (string.IsNullOrWhiteSpace(chart.Name))
        {
            throw new ArgumentException($"The chart titled '{chart.Title}' has an empty name; give it a file name such as 'proxies-throughput'.", nameof(chart));
        }

        if (chart.Name.IndexOfAny(['/', '\\', ':', .. Path.GetInvalidFileNameChars()]) >= 0 || chart.Name.Trim('.').Length == 0)
        {
            throw new ArgumentException($"The chart name '{chart.Name}' contains path characters; it must be a plain file name without extension, such as 'proxies-throughput'.", nameof(chart));
        }

        if (chart.Points is null || chart.Points.Count == 0)
        {
            throw new ArgumentException($"The chart '{chart.Name}' has no points; leave it out of the report or give it data.", nameof(chart));
        }

        foreach (var point in chart.Points)
        {
            if (!double.IsFinite(point.Y))
            {
                throw new ArgumentException($"The chart '{chart.Name}' has a Y value of {point.Y} (not finite) for series '{point.Series}' at {Where(chart, point)}.", nameof(chart));
            }

            if (chart.Kind == ChartKind.Line && !double.IsFinite(point.X))
            {
                throw new ArgumentException($"The chart '{chart.Name}' has an X value of {point.X} (not finite) for series '{point.Series}'.", nameof(chart));
            }

            if (chart.LogScaleY && point.Y <= 0)
            {
                throw new ArgumentException($"The chart '{chart.Name}' has a log-scale y axis but a Y value of {point.Y} (not positive) for series '{point.Series}' at {Where(chart, point)}; a log scale cannot show zero or negative values.", nameof(chart));
            }
        }
    }

    private static string Where(Chart chart, ChartPoint point) =>
        chart.Kind == ChartKind.GroupedBar ? $"category '{point.Category}'" : $"x = {point.X}";

    private static JsonObject DataRow(ChartKind kind, ChartPoint point) => kind == ChartKind.GroupedBar
        ? new JsonObject { ["series"] = point.Series, ["category"] = point.Category, ["y"] = point.Y }
        : new JsonObject { ["series"] = point.Series, ["x"] = point.X, ["y"] = point.Y };

    private static JsonObject Encoding(Chart chart)
    {
        var bars = chart.Kind == ChartKind.GroupedBar;
        var (xField, xType) = bars ? ("category", "nominal") : ("x", "quantitative");
        var x = new JsonObject { ["field"] = xField, ["type"] = xType, ["title"] = chart.XTitle };
        var y = new JsonObject { ["field"] = "y", ["type"] = "quantitative", ["title"] = chart.YTitle };
        // sort: null keeps categories and series in the order the report measured them, not alphabetical.
        var color = new JsonObject { ["field"] = "series", ["type"] = "nominal", ["title"] = "Series", ["sort"] = null };
        var encoding = new JsonObject { ["x"] = x };
        if (bars)
        {
            x["sort"] = null;
            x["axis"] = new JsonObject { ["labelAngle"] = 0 };
            encoding["xOffset"] = new JsonObject { ["field"] = "series", ["type"] = "nominal", ["sort"] = null };
            // Vega-Lite stacks bars from zero by default, which empties a log-scale bar chart; xOffset already sets them side by side.
            y["stack"] = null;
        }

        if (chart.LogScaleY)
        {
            y["scale"] = new JsonObject { ["type"] = "log" };
        }

        encoding["y"] = y;
        encoding["color"] = color;
        encoding["tooltip"] = new JsonArray(
            TooltipField("series", "nominal", "Series"),
            TooltipField(xField, xType, chart.XTitle),
            TooltipField("y", "quantitative", chart.YTitle));
        return encoding;
    }

    private static JsonObject TooltipField(string field, string type, string title) =>
        new() { ["field"] = field, ["type"] = type, ["title"] = title };

    private static string SvgFileOf(string specFile) => specFile[..^SpecExtension.Length] + ".svg";

    /// <summary>Draws the specs; returns why not when it could not.</summary>
    private async Task<string?> DrawAsync(IReadOnlyList<string> specFiles, string outputDirectory, CancellationToken cancellationToken)
    {
        const string SpecsKept = "the Vega-Lite specs (*.vl.json) are in the report folder and render with any Vega-Lite tool";
        var node = FindOnPath("node");
        if (node is null)
        {
            return $"node is not installed (not on PATH); {SpecsKept}.";
        }

        if (!File.Exists(Path.Combine(rendererDirectory, RenderScript)))
        {
            return $"the chart renderer ({RenderScript}) is missing from {rendererDirectory}; {SpecsKept}.";
        }

        var (workingDirectory, installProblem) = await EnsurePackagesAsync(outputDirectory, cancellationToken);
        if (workingDirectory is null)
        {
            return $"{installProblem}; {SpecsKept}.";
        }

        var render = await RunAsync(node, [RenderScript, .. specFiles], workingDirectory, RenderTimeout, cancellationToken);
        return render.Succeeded ? null : $"node {RenderScript} {render.Failure}; {SpecsKept}.";
    }

    /// <summary>The folder whose node_modules hold vega and vega-lite, installing them there if needed; or why there is none.</summary>
    private async Task<(string? Directory, string? Problem)> EnsurePackagesAsync(string outputDirectory, CancellationToken cancellationToken)
    {
        if (PackagesInstalled(rendererDirectory))
        {
            return (rendererDirectory, null);
        }

        var installDirectory = rendererDirectory;
        if (!IsWritable(rendererDirectory))
        {
            // A read-only install (for example a packaged tool): keep a private copy beside the report instead.
            installDirectory = Path.GetFullPath(Path.Combine(outputDirectory, "..", ".charts"));
            Directory.CreateDirectory(installDirectory);
            foreach (var file in RendererFiles.Where(file => File.Exists(Path.Combine(rendererDirectory, file))))
            {
                File.Copy(Path.Combine(rendererDirectory, file), Path.Combine(installDirectory, file), overwrite: true);
            }

            if (PackagesInstalled(installDirectory))
            {
                return (installDirectory, null);
            }
        }

        var npm = FindOnPath("npm");
        if (npm is null)
        {
            return (null, "npm is not installed (not on PATH), so vega and vega-lite cannot be installed");
        }

        var install = await RunAsync(npm, ["ci", "--no-audit", "--no-fund"], installDirectory, InstallTimeout, cancellationToken);
        if (!install.Succeeded)
        {
            return (null, $"npm ci in {installDirectory} {install.Failure}");
        }

        File.Copy(Path.Combine(installDirectory, LockFile), Path.Combine(installDirectory, InstalledLockStamp), overwrite: true);
        return (installDirectory, null);
    }

    private static bool PackagesInstalled(string directory)
    {
        var stamp = Path.Combine(directory, InstalledLockStamp);
        return Directory.Exists(Path.Combine(directory, "node_modules", "vega-lite"))
            && File.Exists(stamp)
            && File.ReadAllBytes(stamp).AsSpan().SequenceEqual(File.ReadAllBytes(Path.Combine(directory, LockFile)));
    }

    private static bool IsWritable(string directory)
    {
        try
        {
            using (File.Create(Path.Combine(directory, $".write-check-{Environment.ProcessId}"), 1, FileOptions.DeleteOnClose))
            {
                return true;
            }
        }
        catch (Exception exception) when (exception is UnauthorizedAccessException or IOException)
        {
            return false;
        }
    }

    /// <summary>Runs a tool without a shell, capturing its output, killing it after <paramref name="timeout"/>.</summary>
    private static async Task<ToolRun> RunAsync(string fileName, IEnumerable<string> arguments, string workingDirectory, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var startInfo = new ProcessStartInfo(fileName)
        {
            WorkingDirectory = workingDirectory,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in arguments)
        {
            startInfo.ArgumentList.Add(argument);
        }

        using var process = new Process { StartInfo = startInfo };
        try
        {
            process.Start();
        }
        catch (Win32Exception exception)
        {
            return new ToolRun(null, string.Empty, $"could not start {fileName}: {exception.Message}");
        }

        var output = process.StandardOutput.ReadToEndAsync(CancellationToken.None);
        var error = process.StandardError.ReadToEndAsync(CancellationToken.None);
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        deadline.CancelAfter(timeout);
        try
        {
            await process.WaitForExitAsync(deadline.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            cancellationToken.ThrowIfCancellationRequested();
            return new ToolRun(null, string.Empty, $"timed out after {timeout.TotalMinutes:0} minutes and was stopped");
        }

        return new ToolRun(process.ExitCode, await output, await error);
    }

    /// <summary>How a tool run ended; <see cref="ExitCode"/> is null when it never started or timed out.</summary>
    private sealed record ToolRun(int? ExitCode, string Output, string Error)
    {
        public bool Succeeded => ExitCode == 0;

        /// <summary>Completes "&lt;tool&gt; …" into a sentence saying how it failed.</summary>
        public string Failure => ExitCode is { } code
            ? $"failed with exit code {code}: {LastLines(Error.Length > 0 ? Error : Output)}"
            : Error;

        // npm prints a long log; its last lines hold the error.
        private static string LastLines(string text)
        {
            const int Limit = 2000;
            var trimmed = text.Trim();
            return trimmed.Length <= Limit ? trimmed : "…" + trimmed[^Limit..];
        }
    }
}
