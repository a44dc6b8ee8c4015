"""Writes the small Common Crawl samples of this folder: `sample.wet.gz` (WET text of invented web pages) and
`sample.warc.gz` (a few invented HTML responses and records the reader must skip).

Every page is fictional and written for this project. The pages vary in quality on purpose (a good article,
cookie-banner boilerplate, keyword spam, a near-duplicate, an exact duplicate, very short pages, contact details
to clean) so that the later filters of the demo pipeline have something to do. Output is byte-for-byte
deterministic: fixed dates, record ids derived from the URLs, gzip members without timestamps.

Run from the project root: `python examples/commoncrawl/make_examples.py`.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
WET_PATH = HERE / "sample.wet.gz"
WARC_PATH = HERE / "sample.warc.gz"

SOURDOUGH = """Keeping a sourdough starter alive through a hot summer

A starter is a small colony of wild yeast and lactic bacteria living in flour and water. In cool weather it \
is forgiving: you can feed it once a day, forget it for a weekend, and it will still rise. Summer changes \
the rules. Above 26 degrees the bacteria work faster than the yeast, the starter turns sour and runny within \
a few hours, and by the next morning it may have collapsed into a grey, vinegary paste.

The first fix is to feed it less often but with more flour. Instead of equal weights of starter, flour and \
water, try one part starter to five parts flour and four parts water. The larger meal takes longer to eat, \
so the starter peaks in the evening instead of at lunch.

The second fix is temperature. A cellar, a cool cupboard on a north wall or the bottom shelf of the \
refrigerator all slow things down. Many bakers keep the jar in the fridge during the week and take it out two \
days before baking, giving it two warm feeds to wake it up.

Finally, watch rather than follow the clock. A healthy starter doubles, smells of yoghurt and ripe apples, \
and has a domed top full of small bubbles. If it smells of nail varnish, it is hungry: feed it sooner."""

SOURDOUGH_SYNDICATED = """Keeping a sourdough starter alive through a hot summer

Posted in Baking Tips | 4 comments

A starter is a small colony of wild yeast and lactic bacteria living in flour and water. In cool weather it \
is forgiving: you can feed it once a day, forget it for a weekend, and it will still rise. Summer changes \
the rules. Above 26 degrees the bacteria work faster than the yeast, the starter turns sour and runny within \
a few hours, and by the next morning it may have collapsed into a grey, sour paste.

The first fix is to feed it less often but with more flour. Instead of equal weights of starter, flour and \
water, try one part starter to five parts flour and four parts water. The bigger meal takes longer to eat, \
so the starter peaks in the evening instead of at lunch.

The second fix is temperature. A cellar, a cool cupboard on a north wall or the bottom shelf of the \
refrigerator all slow things down. Many bakers keep the jar in the fridge during the week and take it out two \
days before baking, giving it two warm feeds to wake it up.

Finally, watch rather than follow the clock. A healthy starter doubles, smells of yoghurt and ripe apples, \
and has a domed top full of small bubbles. If it smells of nail varnish, it is hungry: feed it sooner.

Related posts: Ten mistakes with rye flour | Why my crust is pale"""

JARDINS = """Les jardins partagés de la Croix-Verte fêtent leurs dix ans

Il y a dix ans, la parcelle au bout de la rue des Tanneurs n'était qu'un terrain vague où s'entassaient \
des palettes. Aujourd'hui, quarante familles y cultivent des tomates, des courges et des herbes \
aromatiques, et l'association compte plus de cent adhérents.

« Au début, personne n'y croyait », raconte Hélène, l'une des fondatrices. « Il a fallu trois hivers pour \
que la terre redevienne vivante. On a apporté du compost, du fumier de la ferme voisine, et surtout \
beaucoup de patience. »

Chaque parcelle mesure une douzaine de mètres carrés. Les règles sont simples : pas de pesticides, un \
arrosage partagé selon un planning affiché sur la cabane, et une matinée de travail collectif par mois. \
Les récoltes en trop sont déposées le samedi sur une table à l'entrée, où chacun se sert librement.

Pour l'anniversaire, l'association organise le 14 septembre une journée portes ouvertes avec un atelier de \
semences, une soupe préparée avec les légumes du jardin et un concert en fin d'après-midi."""

JARDINS_COPY = """Les jardins partagés de la Croix-Verte fêtent leurs dix ans

Publié le 2 septembre par la rédaction

Il y a dix ans, la parcelle au bout de la rue des Tanneurs n'était qu'un terrain vague où s'entassaient \
des palettes. Aujourd'hui, quarante familles y cultivent des tomates, des courges et des herbes \
aromatiques, et l'association compte plus de cent adhérents.

« Au début, personne n'y croyait », raconte Hélène, l'une des fondatrices. « Il a fallu trois hivers pour \
que la terre redevienne vivante. On a apporté du compost, du fumier de la ferme voisine, et surtout \
beaucoup de patience. »

Chaque parcelle mesure une douzaine de mètres carrés. Les règles sont simples : pas de pesticides, un \
arrosage partagé selon un planning affiché sur la cabane, et une matinée de travail collectif par mois. \
Les récoltes en trop sont déposées le samedi sur une table à l'entrée, où chacun se sert librement.

Pour l'anniversaire, l'association organise le 14 septembre une journée portes ouvertes.

Partager : Facebook | Twitter | E-mail"""

COOKIES_EN = """We value your privacy
We use cookies to enhance your browsing experience, serve personalised ads or content, and analyse our traffic.
By clicking "Accept All", you consent to our use of cookies.
Accept All
Reject All
Customise
Cookie Policy
Home
About
Shop
Blog
Contact
Privacy Policy
Terms of Use
Sign in
Sign in
Subscribe to our newsletter
Copyright 2024 Brightleaf Media Ltd. All rights reserved."""

COOKIES_FR = """Nous respectons votre vie privée
Nous et nos partenaires utilisons des cookies pour mesurer l'audience et vous proposer des publicités personnalisées.
Tout accepter
Tout refuser
Continuer sans accepter
Paramétrer mes choix
Accueil
Actualités
Boutique
Mentions légales
Politique de confidentialité
Se connecter
S'inscrire à la newsletter
© 2024 Éditions du Canal. Tous droits réservés."""

SPAM_EN = """cheap flights cheap flights london cheap flights paris cheap flights deals
best price hotels best price hotels near me cheap hotels cheap hotels tonight
last minute deals last minute deals last minute flights last minute hotels
book now book now book now save 70% save 70% save 70%
cheap flights cheap hotels cheap car hire cheap holidays cheap travel insurance
flights hotels deals flights hotels deals flights hotels deals"""

SPAM_FR = """rachat de crédit rachat de crédit pas cher rachat crédit immobilier meilleur taux
crédit conso crédit conso rapide crédit sans justificatif crédit en ligne
simulation gratuite simulation gratuite simulation crédit simulation rachat
meilleur taux meilleur taux meilleur taux garanti réponse immédiate
rachat de crédit rachat de crédit rachat de crédit"""

NOT_FOUND = """Page not found
Return to the home page."""

BIENTOT = """Bientôt disponible
Revenez vite !"""

FORUM_EN = """Re: Selling my old road bike, anyone interested?

Still available! It is a 2015 steel frame, 56 cm, with new tyres and a chain I changed in March. \
Asking 250 pounds, which is less than I paid for the wheels alone.

If you want to see it, send me an e-mail at jo.marsh@example.com or call 555-013-2847 after 6 pm. \
More photos are on my page: https://www.example.org/jo/bike-photos and the full list of parts at example.net/parts.

I can meet near the station on Saturday between 10:30 and 12:30."""

FORUM_FR = """Re : Quelqu'un connaît un bon plombier dans le quartier ?

Bonjour à tous,

Nous avons eu une fuite sous l'évier la semaine dernière et le plombier de la place du Marché est venu le \
jour même. Travail propre, devis respecté (89,50 € déplacement compris), et il a pris le temps de nous \
expliquer comment couper l'eau en cas de problème.

Son numéro : 01 99 00 42 17, ou par courriel à contact@plomberie-exemple.fr. Il a aussi un site, \
www.plomberie-exemple.fr, mais il répond plus vite au téléphone.

Bonne journée !"""

RECIPE = """Lentil and carrot soup for a cold evening

This soup takes about forty minutes and feeds four people. It keeps for three days in the fridge and \
tastes better on the second day.

Ingredients: 250 g of red lentils, three carrots, one onion, two cloves of garlic, a teaspoon of ground \
cumin, a litre of vegetable stock, the juice of half a lemon, olive oil, salt and pepper.

Chop the onion and soften it in a little oil over a low heat for ten minutes. Add the garlic and the cumin \
and stir for one more minute. Add the grated carrots, the rinsed lentils and the stock, bring to the boil, \
then let it simmer for twenty-five minutes until the lentils fall apart.

Blend half of the soup and stir it back in, so that it is creamy but still has some texture. Finish with \
the lemon juice, taste, and season. Serve with warm bread and a spoon of yoghurt."""

VILLAGE = """Histoire de Saint-Aubin-des-Prés

Le village de Saint-Aubin-des-Prés apparaît pour la première fois dans une charte de 1132, sous le nom de \
« Sanctus Albinus de Pratis ». Il dépendait alors de l'abbaye voisine, qui y possédait un moulin et \
plusieurs fermes.

Au dix-huitième siècle, la culture du lin fait la richesse de la commune : on compte alors une trentaine de \
tisserands, et le marché du jeudi attire les marchands de toute la vallée. L'église actuelle, reconstruite en \
1764, conserve un retable en bois doré et une cloche fondue sur place.

La commune perd la moitié de ses habitants entre 1850 et 1950, lorsque les jeunes partent travailler dans les \
usines de la ville. Depuis une vingtaine d'années, la tendance s'inverse : l'école a rouvert une deuxième \
classe et une boulangerie s'est installée sur la place."""

SHOP = """Home > Garden > Watering
Garden hose 15 m
£19.99
Add to basket
Garden hose 25 m
£27.99
Add to basket
Hose reel
£34.50
Add to basket
Spray gun, 7 patterns
£8.99
Add to basket
Free delivery over £40
Sort by: price | popularity | newest
Page 1 of 12"""

LOREM = """Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et \
dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea \
commodo consequat.
Welcome to your new site! Edit this page to add your own content."""

REPEATED = """Menu
Home
Home
Home
News
News
News
Login
Login
Login
Home
News
Login"""

BIBLIOTECA = """La biblioteca municipal amplía su horario en verano

Durante los meses de julio y agosto, la biblioteca abrirá también los sábados por la mañana. Los lectores \
podrán llevarse hasta seis libros durante tres semanas, y la sala de estudio tendrá aire acondicionado."""

REPAIR = """Fixing a squeaking bicycle chain in ten minutes

A chain that squeaks is a dry chain, and a dry chain wears out the expensive parts around it. Shift to the \
smallest rear cog, hold a rag around the lower run of the chain and turn the pedals backwards for a minute to \
wipe off the old grime.

Then put one small drop of lubricant on each roller while you slowly turn the cranks. It is tempting to pour \
it on, but extra oil only collects dust. Let it soak in for five minutes, then wipe the outside of the chain \
again: the lubricant is needed inside the rollers, not on the plates.

If the squeak comes back after a short ride, check the jockey wheels of the rear derailleur. They often dry \
out before the chain does."""

CHAT_FR = """Le coin des lecteurs : vos messages

Marc nous écrit : « Merci pour l'article sur les jardins, j'ai inscrit ma fille à l'atelier de semences ! »

Sophie : « Est-ce que le concert du 14 septembre est gratuit ? » Oui, l'entrée est libre.

Pour nous écrire : lecteurs@journal-exemple.fr ou au 01 99 00 58 31 du lundi au vendredi."""

# (url, language header as Common Crawl writes it, text); order is the order of the records.
WET_PAGES: list[tuple[str, str, str]] = [
    ("https://blog.crumb-and-crust.example/summer-starter", "eng", SOURDOUGH),
    ("https://www.lyon-quartiers.example/jardins-croix-verte", "fra", JARDINS),
    ("https://brightleaf-media.example/", "eng", COOKIES_EN),
    ("https://www.editions-du-canal.example/", "fra", COOKIES_FR),
    ("http://cheap-flights-deals.example/london", "eng", SPAM_EN),
    ("http://rachat-credit-pas-cher.example/", "fra", SPAM_FR),
    ("https://bakingnews.example/tips/sourdough-summer", "eng", SOURDOUGH_SYNDICATED),
    ("https://www.infos-rhone.example/2024/09/jardins", "fra", JARDINS_COPY),
    ("https://old-shop.example/products/123", "eng", NOT_FOUND),
    ("https://nouveau-site.example/", "fra", BIENTOT),
    ("https://forum.cyclists.example/t/selling-road-bike/4412", "eng", FORUM_EN),
    ("https://forum.quartier-marche.example/t/plombier/981", "fra", FORUM_FR),
    ("https://www.simple-soups.example/lentil-carrot", "eng", RECIPE),
    ("https://saint-aubin-des-pres.example/histoire", "fra", VILLAGE),
    ("https://gardenstore.example/garden/watering", "eng", SHOP),
    ("https://recipes-mirror.example/soup/lentil-carrot", "eng", RECIPE),
    ("https://my-new-site.example/", "eng,lat", LOREM),
    ("https://tiny-portal.example/index", "eng", REPEATED),
    ("https://biblioteca-villaverde.example/noticias/verano", "spa", BIBLIOTECA),
    ("https://wheels-and-spokes.example/chain-squeak", "eng", REPAIR),
    ("https://www.journal-exemple.example/courrier-des-lecteurs", "fra,eng", CHAT_FR),
]

WET_DATE = "2024-03-04T08:{:02d}:00Z"


def record_id(*parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, '|'.join(parts))}>"


def sha1_digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def warc_record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    """One WARC/1.0 record: version line, named fields, Content-Length, blank line, block, two CRLFs."""
    lines = ["WARC/1.0", *(f"{name}: {value}" for name, value in headers), f"Content-Length: {len(block)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + block + b"\r\n\r\n"


def gzip_member(data: bytes) -> bytes:
    # One gzip member per record, as Common Crawl writes them; mtime=0 keeps the output reproducible.
    return gzip.compress(data, compresslevel=9, mtime=0)


def warcinfo(filename: str, date: str, description: str) -> bytes:
    fields = (
        "software: chatlike examples/commoncrawl/make_examples.py\r\n"
        "format: WARC File Format 1.0\r\n"
        f"description: {description}\r\n"
        "isPartOf: chatlike-examples\r\n"
    ).encode()
    return warc_record(
        [
            ("WARC-Type", "warcinfo"),
            ("WARC-Date", date),
            ("WARC-Filename", filename),
            ("WARC-Record-ID", record_id("warcinfo", filename)),
            ("Content-Type", "application/warc-fields"),
        ],
        fields,
    )


def build_wet() -> bytes:
    out = [gzip_member(warcinfo(WET_PATH.name, "2024-03-04T12:00:00Z", "invented pages for the demo pipeline"))]
    for i, (url, language, text) in enumerate(WET_PAGES):
        block = (text + "\n").encode("utf-8")
        headers = [
            ("WARC-Type", "conversion"),
            ("WARC-Target-URI", url),
            ("WARC-Date", WET_DATE.format(2 * i)),
            ("WARC-Record-ID", record_id("conversion", url, str(i))),
            ("WARC-Refers-To", record_id("response", url, str(i))),
            ("WARC-Block-Digest", sha1_digest(block)),
            ("WARC-Identified-Content-Language", language),
            ("Content-Type", "text/plain"),
        ]
        out.append(gzip_member(warc_record(headers, block)))
    return b"".join(out)


def html_page(title: str, lang: str, body_html: str, charset: str = "utf-8") -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="{charset}">\n<title>{title}</title>\n'
        '</head>\n<body>\n<header><nav><a href="/">Home</a> | <a href="/about">About</a> | '
        '<a href="/contact">Contact</a></nav></header>\n'
        f"<main><article>\n<h1>{title}</h1>\n{body_html}\n</article></main>\n"
        "<footer><p>Invented page written for the chatlike examples.</p></footer>\n</body>\n</html>\n"
    )


def paragraphs(text: str) -> str:
    return "\n".join(f"<p>{p}</p>" for p in text.split("\n\n")[1:])


def chunked(body: bytes, size: int = 200) -> bytes:
    parts = [f"{len(body[i:i + size]):x}\r\n".encode() + body[i : i + size] + b"\r\n" for i in range(0, len(body), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def http_response(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode("ascii") + body


def http_request(url: str) -> bytes:
    host = url.split("/")[2]
    path = "/" + "/".join(url.split("/")[3:])
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: chatlike-example/1.0\r\n\r\n".encode("ascii")


def build_warc() -> bytes:
    soup = html_page("Lentil and carrot soup for a cold evening", "en", paragraphs(RECIPE)).encode("utf-8")
    village = html_page("Histoire de Saint-Aubin-des-Prés", "fr", paragraphs(VILLAGE), "windows-1252")
    repair = html_page("Fixing a squeaking bicycle chain in ten minutes", "en", paragraphs(REPAIR)).encode("utf-8")
    jardins = html_page("Les jardins partagés de la Croix-Verte", "fr", paragraphs(JARDINS)).encode("utf-8")
    robots = b"User-agent: *\nDisallow: /private/\n"
    # (url, HTTP status, headers, body on the wire)
    responses = [
        ("https://www.simple-soups.example/lentil-carrot", "200 OK",
         [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(soup)))], soup),
        # no charset in the HTTP header: the reader must find windows-1252 in the <meta> tag
        ("https://saint-aubin-des-pres.example/histoire", "200 OK",
         [("Content-Type", "text/html")], village.encode("cp1252")),
        ("https://wheels-and-spokes.example/chain-squeak", "200 OK",
         [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")], gzip.compress(repair, mtime=0)),
        ("https://www.lyon-quartiers.example/jardins-croix-verte", "200 OK",
         [("Content-Type", "text/html; charset=UTF-8"), ("Transfer-Encoding", "chunked")], chunked(jardins)),
        ("https://www.simple-soups.example/robots.txt", "200 OK",
         [("Content-Type", "text/plain"), ("Content-Length", str(len(robots)))], robots),
        ("http://www.simple-soups.example/lentil-carrot", "301 Moved Permanently",
         [("Location", "https://www.simple-soups.example/lentil-carrot"), ("Content-Length", "0")], b""),
    ]
    out = [gzip_member(warcinfo(WARC_PATH.name, "2024-03-05T09:00:00Z", "invented HTML responses"))]
    for i, (url, status, headers, body) in enumerate(responses):
        date = f"2024-03-05T09:{10 + i:02d}:00Z"
        request = http_request(url)
        response = http_response(status, headers, body)
        response_id = record_id("response", url, status)
        out.append(gzip_member(warc_record(
            [("WARC-Type", "request"), ("WARC-Target-URI", url), ("WARC-Date", date),
             ("WARC-Record-ID", record_id("request", url, status)), ("WARC-Concurrent-To", response_id),
             ("Content-Type", "application/http; msgtype=request")],
            request,
        )))
        out.append(gzip_member(warc_record(
            [("WARC-Type", "response"), ("WARC-Target-URI", url), ("WARC-Date", date),
             ("WARC-Record-ID", response_id), ("WARC-Block-Digest", sha1_digest(response)),
             ("Content-Type", "application/http; msgtype=response")],
            response,
        )))
    # A later capture of the soup page that found it unchanged: a revisit record, with headers but no body.
    soup_url = responses[0][0]
    revisit = http_response("200 OK", [("Content-Type", "text/html; charset=utf-8")], b"")
    out.append(gzip_member(warc_record(
        [("WARC-Type", "revisit"), ("WARC-Target-URI", soup_url), ("WARC-Date", "2024-03-06T09:00:00Z"),
         ("WARC-Record-ID", record_id("revisit", soup_url)),
         ("WARC-Profile", "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"),
         ("WARC-Refers-To", record_id("response", soup_url, "200 OK")),
         ("Content-Type", "application/http; msgtype=response")],
        revisit,
    )))
    return b"".join(out)


def main() -> None:
    WET_PATH.write_bytes(build_wet())
    WARC_PATH.write_bytes(build_warc())
    print(f"wrote {WET_PATH.name} ({len(WET_PAGES)} pages) and {WARC_PATH.name}")


if __name__ == "__main__":
    main()
