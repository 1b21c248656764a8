namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// The compiled call of a contract method does what <c>MethodInfo.Invoke</c> did for the pooled proxy: arguments in,
/// out and ref values back into the argument array, a null for a value type read as its default, the exception unwrapped.
/// </summary>
[TestFixture]
public sealed class OperationInvokerTests
{
    public interface IBase
    {
        string Inherited(string text);
    }

    public interface IShapes : IBase
    {
        int Add(int a, int b);

        void Touch();

        bool TryParse(string text, out int value);

        void Twice(ref int value);

        string Throws(string message);
    }

    [Test]
    public void ACallPassesItsArguments_AndReturnsTheResultBoxed()
    {
        Assert.That(Invoke(nameof(IShapes.Add), 2, 3), Is.EqualTo(5));
    }

    [Test]
    public void AVoidMethod_ReturnsNull()
    {
        var shapes = new Shapes();
        Assert.That(OperationInvoker<IShapes>.For(typeof(IShapes).GetMethod(nameof(IShapes.Touch))!)(shapes, []), Is.Null);
        Assert.That(shapes.Called, Is.True);
    }

    [Test]
    public void AnOutValue_IsWrittenBackIntoTheArguments()
    {
        object?[] args = ["42", null];
        Assert.That(OperationInvoker<IShapes>.For(typeof(IShapes).GetMethod(nameof(IShapes.TryParse))!)(new Shapes(), args), Is.EqualTo(true));
        Assert.That(args[1], Is.EqualTo(42));
    }

    [Test]
    public void ARefValue_IsReadAndWrittenBack()
    {
        object?[] args = [21];
        _ = OperationInvoker<IShapes>.For(typeof(IShapes).GetMethod(nameof(IShapes.Twice))!)(new Shapes(), args);
        Assert.That(args[0], Is.EqualTo(42));
    }

    [Test]
    public void ANullForAValueType_ReadsAsItsDefault()
    {
        Assert.That(Invoke(nameof(IShapes.Add), null, 7), Is.EqualTo(7));
    }

    [Test]
    public void AMethodOfABaseContract_IsCalledOnTheChannel()
    {
        var inherited = typeof(IBase).GetMethod(nameof(IBase.Inherited))!;
        Assert.That(OperationInvoker<IShapes>.For(inherited)(new Shapes(), ["x"]), Is.EqualTo("base x"));
    }

    [Test]
    public void AnExceptionReachesTheCallerUnwrapped()
    {
        var error = Assert.Throws<InvalidOperationException>(() => Invoke(nameof(IShapes.Throws), "boom"));
        Assert.That(error!.Message, Is.EqualTo("boom"));
    }

    private static object? Invoke(string name, params object?[] args) =>
        OperationInvoker<IShapes>.For(typeof(IShapes).GetMethod(name)!)(new Shapes(), args);

    private sealed class Shapes : IShapes
    {
        public bool Called { get; private set; }

        public int Add(int a, int b) => a + b;

        public void Touch() => Called = true;

        public bool TryParse(string text, out int value) => int.TryParse(text, System.Globalization.CultureInfo.InvariantCulture, out value);

        public void Twice(ref int value) => value *= 2;

        public string Throws(string message) => throw new InvalidOperationException(message);

        public string Inherited(string text) => "base " + text;
    }
}
