/// Names for generated employees. First names fit `VARCHAR(14)`, last names `VARCHAR(16)`.
enum NameLists {
    static let maleFirstNames: [String] = [
        "Aaron", "Adrian", "Ahmed", "Akira", "Alejandro", "Aleksander", "Amit", "Anders", "Andrei", "Antonio",
        "Arjun", "Arturo", "Bastian", "Benedikt", "Boris", "Bruno", "Carlos", "Chen", "Claude", "Cyrus",
        "Dariusz", "Davide", "Dmitri", "Eduardo", "Emil", "Enrique", "Erik", "Ethan", "Farid", "Felix",
        "Florian", "Gaston", "Georg", "Giovanni", "Goran", "Gustavo", "Hamid", "Hans", "Haruto", "Henrik",
        "Hiroshi", "Ian", "Igor", "Ivan", "Jakob", "Jamal", "Jan", "Javier", "Jens", "Jorge",
        "Julian", "Kaito", "Karim", "Kenji", "Klaus", "Lars", "Leon", "Luca", "Lukas", "Magnus",
        "Malik", "Marco", "Mateo", "Matthias", "Mehmet", "Miguel", "Mikhail", "Nikolai", "Niklas", "Omar",
        "Oskar", "Pablo", "Pavel", "Pedro", "Pieter", "Rafael", "Rajesh", "Ramon", "Ravi", "Rolf",
        "Ruben", "Samir", "Santiago", "Sebastian", "Sergei", "Stefan", "Sven", "Takeshi", "Tariq", "Thomas",
        "Tobias", "Tomasz", "Umberto", "Viktor", "Vincent", "Wei", "Wojciech", "Xavier", "Yusuf", "Zoltan",
    ]

    static let femaleFirstNames: [String] = [
        "Adriana", "Agnes", "Aiko", "Alessandra", "Alina", "Amara", "Ana", "Anika", "Astrid", "Aylin",
        "Beatriz", "Birgit", "Camila", "Carla", "Chiara", "Clara", "Daniela", "Dagmar", "Elena", "Elif",
        "Elisa", "Emilia", "Eva", "Fatima", "Freya", "Gabriela", "Greta", "Hana", "Helga", "Ingrid",
        "Irina", "Isabel", "Jana", "Johanna", "Julia", "Katarzyna", "Keiko", "Klara", "Lara", "Leila",
        "Lena", "Lucia", "Magdalena", "Maja", "Marta", "Mei", "Mila", "Mira", "Nadia", "Naomi",
        "Natalia", "Nina", "Olga", "Paula", "Priya", "Rosa", "Sakura", "Sara", "Simone", "Sofia",
        "Svetlana", "Tamara", "Valentina", "Vera", "Yasmin", "Yuki", "Zainab", "Zofia", "Bianca", "Dorothea",
    ]

    static let lastNames: [String] = [
        "Abramowitz", "Achterberg", "Alvarez", "Andersen", "Antonelli", "Bachmann", "Baranski", "Becker",
        "Bergstrom", "Bianchi", "Bjornsson", "Brandt", "Castellano", "Chandra", "Christensen", "Costa",
        "Dalgaard", "Delacroix", "Dimitrov", "Dubois", "Eckhardt", "Engstrom", "Esposito", "Fagerlund",
        "Ferreira", "Fischer", "Fontaine", "Friedman", "Galvez", "Gautier", "Gonzalez", "Gruber",
        "Gustafsson", "Halvorsen", "Hartmann", "Hayashi", "Hernandez", "Hoffmann", "Holmberg", "Ibrahim",
        "Ivanova", "Jablonski", "Jansen", "Johansson", "Kaminski", "Kapoor", "Kawasaki", "Keller",
        "Kowalczyk", "Kruger", "Kuznetsov", "Laurent", "Lehmann", "Lindqvist", "Lombardi", "Lorenz",
        "Mahmoud", "Marchetti", "Martinez", "Matsumoto", "Meyer", "Moreau", "Morozov", "Nakamura",
        "Navarro", "Nielsen", "Novak", "Nowakowski", "Okafor", "Olsen", "Ortega", "Papadopoulos",
        "Pereira", "Petrovic", "Pham", "Quintero", "Rasmussen", "Reinholt", "Ricci", "Rodrigues",
        "Rossi", "Sandoval", "Santoro", "Sato", "Schneider", "Schulz", "Silva", "Sorensen",
        "Steinberg", "Suzuki", "Takahashi", "Tanaka", "Tkachenko", "Torres", "Ulrich", "Vasquez",
        "Vogel", "Wagner", "Watanabe", "Weber", "Wieczorek", "Yamamoto", "Yilmaz", "Zielinska",
        "Zimmermann", "Bauer", "Moretti", "Haddad", "Kovacs", "Lindgren", "Mendoza", "Nyberg",
    ]
}
