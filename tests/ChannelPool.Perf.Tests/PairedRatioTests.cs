using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Tests;

public class PairedRatioTests
{
    [Test]
    public void Of_TakesTheMedianOfTheRoundsRatios_SoALoadThatDriftsAcrossRoundsCancels()
    {
        // The machine's load halves and doubles the rates from round to round; within each round the kind on top makes
        // 0.9 of the baseline's calls, and the ratio of the totals would read the drift instead.
        double[] baseline = [10_000, 5_000, 20_000, 2_500, 10_000];
        double[] rates = [9_000, 4_500, 18_000, 2_250, 9_000];

        var ratio = PairedRatio.Of(rates, baseline);

        Assert.That(ratio, Is.Not.Null);
        Assert.That(ratio!.Value.Median, Is.EqualTo(0.9).Within(1e-9));
        Assert.That(ratio.Value.Low, Is.EqualTo(0.9).Within(1e-9));
        Assert.That(ratio.Value.High, Is.EqualTo(0.9).Within(1e-9));
        Assert.That(ratio.Value.Rounds, Is.EqualTo(5));
        Assert.That(ratio.Value.ToString(), Is.EqualTo("0.90× (0.90–0.90)"));
    }

    [Test]
    public void Of_DropsARoundThatAStallHitOnOneSide_AndShowsItInTheSpread()
    {
        double[] baseline = [100, 100, 100, 100, 100];
        double[] rates = [100, 100, 10, 100, 110];

        var ratio = PairedRatio.Of(rates, baseline)!.Value;

        Assert.That(ratio.Median, Is.EqualTo(1.0).Within(1e-9), "one stalled round does not move the median");
        Assert.That(ratio.Low, Is.EqualTo(1.0).Within(1e-9));
        Assert.That(ratio.High, Is.EqualTo(1.0).Within(1e-9));
        Assert.That(PairedRatio.Quantile([0.1, 1.0, 1.0, 1.0, 1.1], 0.1), Is.EqualTo(0.46).Within(1e-9), "interpolated between the two nearest");
    }

    [Test]
    public void Of_GivesNoRatio_WhenTheRoundsDoNotPairUpOrABaselineRoundMadeNoCall()
    {
        Assert.That(PairedRatio.Of([1, 2, 3], [1, 2]), Is.Null, "rounds of another cell");
        Assert.That(PairedRatio.Of([], []), Is.Null);
        Assert.That(PairedRatio.Of([1, 2], [1, 0]), Is.Null);
    }

    [Test]
    public void ToString_ShowsTheMedianAlone_ForOneRound() =>
        Assert.That(PairedRatio.Of([95], [100])!.Value.ToString(), Is.EqualTo("0.95×"));
}
