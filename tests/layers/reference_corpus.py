"""A ten-line SentencePiece-tokenized English-Russian corpus and its vocabularies, small
enough that each expected batch, length and id below is worked out by hand."""

# The features and labels files, one line each.
FEATURES = ["▁a", "▁ 2 1", "▁yes", "▁no", "▁cat", "▁he ▁can", "▁door ▁open", "▁I ▁like ▁it",
            "▁bat ▁in ▁bad", "▁good ▁day ▁today"]
LABELS = ["▁a", "▁ 2 1", "▁да", "▁нет", "▁кот", "▁он ▁может", "▁дверь ▁открыта",
          "▁Мне ▁нравится ▁это", "▁лету чая ▁мы шь ▁в ▁крова ти", "▁хороший ▁день ▁сегодня"]
SPECIALS = ["<blank>", "<s>", "</s>"]
# Every token occurs once, so "by frequency, then by token" is code point order, sorted by hand:
SOURCE_VOCABULARY = SPECIALS + [
    "1", "2", "▁", "▁I", "▁a", "▁bad", "▁bat", "▁can", "▁cat", "▁day", "▁door", "▁good",
    "▁he", "▁in", "▁it", "▁like", "▁no", "▁open", "▁today", "▁yes",
]
TARGET_VOCABULARY = SPECIALS + [
    "1", "2", "ти", "чая", "шь", "▁", "▁a", "▁Мне", "▁в", "▁да", "▁дверь", "▁день", "▁кот",
    "▁крова", "▁лету", "▁может", "▁мы", "▁нет", "▁нравится", "▁он", "▁открыта", "▁сегодня",
    "▁хороший", "▁это",
]
HE, CAN, CAT = 15, 10, 11  # ids read off SOURCE_VOCABULARY above
ON, MOZHET = 22, 18  # "▁он", "▁может" in TARGET_VOCABULARY
