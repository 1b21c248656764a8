using System.Text;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>Indented C# text: the generated files are read by people stepping through them, so they are laid out.</summary>
internal sealed class SourceWriter
{
    private readonly StringBuilder _text = new();
    private int _depth;

    public SourceWriter Line(string line = "")
    {
        if (line.Length > 0)
        {
            _text.Append(' ', _depth * 4);
        }

        _text.Append(line).Append('\n');
        return this;
    }

    public SourceWriter Open(string declaration)
    {
        Line(declaration);
        Line("{");
        _depth++;
        return this;
    }

    public SourceWriter Close()
    {
        // Members are written with a blank line after each; the last one's is dropped before the brace.
        if (_text.Length >= 2 && _text[_text.Length - 1] == '\n' && _text[_text.Length - 2] == '\n')
        {
            _text.Length--;
        }

        _depth--;
        return Line("}");
    }

    public override string ToString() => _text.ToString();
}
